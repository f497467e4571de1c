"""Paths read from the study database, confined to the server's own roots.

Whoever can write to the study database decides a study's `storage_path` and its trials'
`checkpoint` paths, so every such path goes through one check, `resolve_within` (symlinks and `..`
resolved; the roots come from the server's configuration alone), before the server writes under it
(`study_folder`: `/start`, finalize) or serves it (`open_within`: checkpoint downloads, run
configs). A file is then opened one component at a time from the root with `O_NOFOLLOW`, so a
symlink swapped in after the check makes the open fail instead of leaving the root, and the caller
serves the descriptor it opened: the file that was checked is the file that is sent.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from tuner.errors import Conflict, NotFound
from tuner.storage import study_attrs
from tuner.storage.confine import resolve_within
from tuner.storage.confine import study_folder as confined_folder
from tuner.storage.confine import study_location as confined_location
from tuner.storage.object_store import ObjectLocation

__all__ = [
    "PathRefused",
    "StudyFolderRefused",
    "open_within",
    "resolve_within",
    "study_folder",
    "study_location",
]


class PathRefused(NotFound):
    """A file path outside the server's roots, missing, or not a regular file (404)."""


class StudyFolderRefused(Conflict):
    """A study whose stored `storage_path` lies outside the server's storage root (409)."""


def study_folder(attrs: dict[str, Any], root: Path, name: str) -> Path:
    """Where the server may write for study `name`: its stored `storage_path` when that resolves
    inside `root`, `root/name` when it has none; StudyFolderRefused when it lies elsewhere."""
    raw = study_attrs.STORAGE_PATH.of(attrs)
    found = confined_folder(raw, root, name)  # a name from the database is checked like a path: no `..`
    if found is None:
        raise StudyFolderRefused(
            f"study {name!r} keeps its files at {str(raw)[:200]!r}, outside this server's storage root "
            f"({root}); refused (run it from a terminal, or serve with that --storage)"
        )
    return found


def study_location(
    attrs: dict[str, Any], root: Path, name: str, objects: ObjectLocation | None
) -> Path | ObjectLocation:
    """`study_folder`, or the object store location of a study kept inside the server's object
    store root `objects`; StudyFolderRefused when it lies elsewhere."""
    raw = study_attrs.STORAGE_PATH.of(attrs)
    found = confined_location(raw, root, name, objects)
    if found is None:
        raise StudyFolderRefused(
            f"study {name!r} keeps its files at {str(raw)[:200]!r}, outside this server's storage root "
            f"({objects or root}); refused (run it from a terminal, or serve with that --storage)"
        )
    return found


def open_within(raw: Any, roots: tuple[Path, ...], base: Path) -> tuple[BinaryIO, Path]:
    """`raw` (relative ones from `base`) opened for reading if it is a regular file inside `roots`,
    with the real path it was checked at. No symbolic link is followed while opening: each
    component is opened with `O_NOFOLLOW` relative to its parent's descriptor. PathRefused otherwise,
    with a message that says which rule refused it."""
    if not isinstance(raw, str) or not raw:
        raise PathRefused("no file path is recorded")
    real = resolve_within(raw, roots, base)
    if real is None:
        shown = ", ".join(str(r) for r in roots)
        raise PathRefused(f"{raw[:200]!r} is outside the server's storage root ({shown}); refused")
    root = next(r for r in (r.resolve() for r in roots) if r == real or r in real.parents)
    parts = real.relative_to(root).parts
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | (0 if last else os.O_DIRECTORY)
            try:
                child = os.open(part, flags, dir_fd=fd)
            finally:
                os.close(fd)
            fd = child
    except OSError:
        raise PathRefused(
            f"{raw[:200]!r} does not exist, is not a regular file or changed while it was opened"
        ) from None
    if not parts or not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathRefused(f"{raw[:200]!r} is not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb"), real
