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
