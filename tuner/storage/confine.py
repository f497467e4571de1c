"""Paths read from a study (a trial's run folder, a study's storage folder) confined to a root: the
database is data, and a path in it must not send a process elsewhere on the machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuner.storage.object_store import KeyRefused, ObjectLocation, is_uri


def resolve_within(raw: Any, roots: tuple[Path, ...], base: Path) -> Path | None:
    """The real path of `raw` (relative ones taken from `base`; symlinks and `..` resolved) if it
    lies inside one of `roots`, else None. Never touches what the path names beyond resolving it,
    so the answer says nothing about whether a file exists."""
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return None

    path = Path(raw).expanduser()
    real = (path if path.is_absolute() else base / path).resolve()
    for root in roots:
        real_root = root.resolve()
        if real == real_root or real_root in real.parents:
            return real
    return None


def study_folder(stored: Any, root: Path, name: str) -> Path | None:
    """Where study `name` keeps its files: its stored `storage_path` (a relative one taken from
    `root`, as every process that reads it takes it) when that lies inside `root`, `root/name` when
    none is stored; None when it lies elsewhere, or is an object store URI (`s3://...`), which is
    no folder here. The one place a stored storage path is resolved."""
    raw = stored if stored is not None else str(root / name)
    if isinstance(raw, str) and is_uri(raw):
        return None
    return resolve_within(raw, (root,), root)


def study_location(
    stored: Any, root: Path, name: str, objects: ObjectLocation | None
) -> Path | ObjectLocation | None:
    """`study_folder`, or for a study kept in an object store its location when that lies inside
    `objects` (the server's object store root); None when refused."""
    if isinstance(stored, str) and is_uri(stored):
        if objects is None:
            return None
        try:
            return objects.confine(stored, "storage_path")
        except KeyRefused:
            return None
    return study_folder(stored, root, name)
