"""Finding and loading spaces: by name (built-in `search_spaces/`, `$RNNTUNE_SPACES_DIR`) or by path.

`resolve_space` is the one way in for callers that create a study: a name, a path, an inline mapping
or a SearchSpace, plus `--range`/`--set` overrides, become one validated SearchSpace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tuner.space.errors import SpaceError
from tuner.space.model import SearchSpace

SPACES_ENV = "RNNTUNE_SPACES_DIR"
BUILTIN_SPACES_DIR = Path(__file__).resolve().parents[2] / "search_spaces"
INLINE_NAME = "inline"


def space_dirs() -> list[Path]:
    """Where space files are looked up by name: RNNTUNE_SPACES_DIR (os.pathsep-separated), then built-ins."""
    dirs = [Path(p) for p in os.environ.get(SPACES_ENV, "").split(os.pathsep) if p]
    return [*dirs, BUILTIN_SPACES_DIR]


def list_spaces() -> dict[str, Path]:
    """Space name -> file, for every file in `space_dirs()` (earlier dirs shadow later ones)."""
    out: dict[str, Path] = {}
    for d in reversed(space_dirs()):
        if d.is_dir():
            for path in sorted([*d.glob("*.yaml"), *d.glob("*.yml")]):
                out[path.stem] = path
    return dict(sorted(out.items()))


def find_space(name_or_path: str | os.PathLike) -> Path:
    """The file of a space given by path or by name (searched in `space_dirs()`)."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or os.sep in str(name_or_path):
        if candidate.is_file():
            return candidate
        raise SpaceError(f"search space file {candidate} does not exist")
    for d in space_dirs():
        for suffix in (".yaml", ".yml"):
            path = d / f"{name_or_path}{suffix}"
            if path.is_file():
                return path
    known = ", ".join(sorted(list_spaces())) or "none"
    raise SpaceError(f"unknown search space {str(name_or_path)!r}; known: {known} (or give a file path)")


def load_space(name_or_path: str | os.PathLike) -> SearchSpace:
    """Read and validate a space file by name or path; the space is named after the file."""
    path = find_space(name_or_path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise SpaceError(f"{path}: not valid YAML: {err}") from None
    if isinstance(raw, Mapping):
        if "name" in raw:
            raise SpaceError(f"{path}: unknown key(s) name; a space is named after its file ({path.stem})")
        raw = {**raw, "name": path.stem}
    return SearchSpace.from_dict(raw, where=str(path), path=path.resolve())


def resolve_space(
    space: SearchSpace | str | os.PathLike | Mapping[str, Any],
    overrides: Mapping[str, Any] | None = None,
) -> SearchSpace:
    """One validated space from a name or path, an inline mapping (named `inline` unless it says
    otherwise) or a SearchSpace, with `overrides` (`ranges`: {name: "low:high[:scale]"}, `set`:
    {setting: value}) applied."""
    if isinstance(space, Mapping):
        name = space.get("name", INLINE_NAME)
        space = SearchSpace.from_dict({**space, "name": name}, where=f"inline space {name!r}")
    elif not isinstance(space, SearchSpace):
        space = load_space(space)
    overrides = overrides or {}
    if overrides.get("ranges") or overrides.get("set"):
        space = space.with_overrides(overrides.get("ranges"), overrides.get("set"))
    return space
