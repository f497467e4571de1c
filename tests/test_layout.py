"""The package layout's rules that no linter checks: each folder of `tuner/` (sub-packages
included) says in its docstring what it holds. Function size, not file size, is bounded: ruff's
complexity limits (C901, PLR0912, PLR0915 in pyproject.toml) on trainer/ and tuner/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(p.parent for p in (ROOT / "tuner").rglob("*/__init__.py"))


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_tuner_folder_says_what_it_holds(folder: Path) -> None:
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
    assert doc and len(doc) > 40, (
        f"{(folder / '__init__.py').relative_to(ROOT)} needs a docstring saying what the folder holds"
    )


def test_the_sweeps_are_grouped_by_feature() -> None:
    """tuner/sweeps/ holds feature folders only (and its package docstring), each named in it."""
    sweeps = ROOT / "tuner" / "sweeps"
    loose = sorted(p.name for p in sweeps.glob("*.py") if p.name != "__init__.py")
    assert loose == [], f"put these modules in a feature folder of tuner/sweeps/: {loose}"
    doc = ast.get_docstring(ast.parse((sweeps / "__init__.py").read_text())) or ""
    features = sorted(p.parent.name for p in sweeps.glob("*/__init__.py"))
    assert all(f"`{name}`" in doc for name in features), (features, doc)


UPSTREAM = ("ray", "optuna")
ADAPTERS = ROOT / "tuner" / "upstream"


def _private_imports(path: Path) -> list[str]:
    """The imports in `path` that name a private module or name of Ray or Optuna."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules = [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for module, name in modules:
            parts = module.split(".")
            if parts[0] in UPSTREAM and any(p.startswith("_") for p in [*parts[1:], name]):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {module} {name}".strip())
    return found


def test_private_upstream_names_are_imported_by_their_adapters_only() -> None:
    """Ray's and Optuna's private names live behind one adapter module each (tuner/upstream/):
    an upgrade of either is re-checked there, not across the tree (docs/contracts.md)."""
    product = [p for root in ("tuner", "trainer", "bench") for p in (ROOT / root).rglob("*.py")]
    outside = [hit for p in product if ADAPTERS not in p.parents for hit in _private_imports(p)]
    assert outside == [], "private upstream imports outside tuner/upstream/:\n" + "\n".join(outside)
    adapters = sorted(p.name for p in ADAPTERS.glob("*.py") if _private_imports(p))
    assert len(adapters) <= len(UPSTREAM), f"one adapter per upstream library, found {adapters}"


def _kind_checks(path: Path, names: set[str]) -> list[str]:
    """A scheduler's name written out, or a comparison of a `scheduler`, in `path`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and node.value in names:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
        if isinstance(node, ast.Compare) and any(
            (isinstance(side, ast.Attribute) and side.attr == "scheduler")
            or (isinstance(side, ast.Name) and side.id == "scheduler")
            for side in [node.left, *node.comparators]
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


KINDS_PACKAGE = ROOT / "tuner" / "policies" / "kinds"
# The paper's procedure names the one scheduler it allows (`none`, tuner.policies.procedure).
KIND_CHECKS_ALLOWED = {ROOT / "tuner" / "policies" / "procedure.py"}


def test_kind_checks_live_with_their_kinds() -> None:
    """The kinds of sweep have one owner (tuner/policies/kinds/): their names are written and the
    spec's scheduler compared nowhere else in tuner/ (the registry answers: `kind(name).population`).
    `none` is too common a word to search for; its kind's checks are its rows' like the others'."""
    from tuner.policies.kinds import SCHEDULERS

    names = set(SCHEDULERS) - {"none"}
    product = [p for p in (ROOT / "tuner").rglob("*.py") if KINDS_PACKAGE not in p.parents]
    outside = [hit for p in product if p not in KIND_CHECKS_ALLOWED for hit in _kind_checks(p, names)]
    assert outside == [], "kind checks outside tuner/policies/kinds/:\n" + "\n".join(outside)
