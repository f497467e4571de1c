"""The package layout's rules that no linter checks: every module of `trainer/` and `tuner/` stays
under 400 lines, and each folder of `tuner/` says in its docstring what it holds."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(p for pkg in ("trainer", "tuner") for p in (ROOT / pkg).rglob("*.py"))
MAX_LINES = 400


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_is_under_the_line_limit(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines < MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines; split it by concern"


@pytest.mark.parametrize(
    "folder", sorted(p.parent for p in (ROOT / "tuner").glob("*/__init__.py")), ids=lambda p: p.name
)
def test_each_tuner_folder_says_what_it_holds(folder: Path) -> None:
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
    assert doc and len(doc) > 40, (
        f"tuner/{folder.name}/__init__.py needs a docstring saying what the folder holds"
    )
