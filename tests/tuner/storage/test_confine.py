"""Paths read from the database are confined to a root (tuner/storage/confine.py, and the API's
study folder built on it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.api.paths import StudyFolderRefused, study_folder
from tuner.storage.confine import resolve_within


def test_only_paths_inside_the_root_resolve(tmp_path: Path):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "link").symlink_to(tmp_path)
    assert resolve_within(str(root / "a" / "b"), (root,), root) == (root / "a" / "b").resolve()
    assert resolve_within("a", (root,), root) == (root / "a").resolve()  # relative to the base
    for outside in ("/etc", str(root / ".." / "x"), str(root / "link" / "x"), "", "a\x00b", None, 3):
        assert resolve_within(outside, (root,), root) is None, outside


def test_a_study_folder_from_the_database_stays_inside_the_root(tmp_path: Path):
    root = tmp_path / "storage"
    root.mkdir()
    assert study_folder({}, root, "mog-1") == (root / "mog-1").resolve()
    assert study_folder({"storage_path": str(root / "x")}, root, "mog-1") == (root / "x").resolve()
    for attrs, name in (({}, "../escape"), ({"storage_path": "/etc"}, "mog-1")):
        with pytest.raises(StudyFolderRefused, match="outside this server's storage root"):
            study_folder(attrs, root, name)
