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


def test_a_relative_stored_storage_path_is_taken_from_the_storage_root_everywhere(tmp_path, monkeypatch):
    """The API and the sweep resolve a stored relative storage_path alike: from the storage root,
    never from a process's working directory (a study created with "relative/dir2" made a folder
    outside the root before)."""
    from tuner.storage.confine import study_folder as confined
    from tuner.storage.study import storage_root, stored_folder

    root, cwd = tmp_path / "root", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("RNNTUNE_STORAGE", str(root))
    assert storage_root() == root
    assert stored_folder("relative/dir2", storage_root()) == (root / "relative" / "dir2").resolve()
    assert confined("relative/dir2", root, "s") == (root / "relative" / "dir2").resolve()
    assert (
        study_folder({"storage_path": "relative/dir2"}, root, "s") == (root / "relative" / "dir2").resolve()
    )
    assert confined("../outside", root, "s") is None
    assert not (cwd / "relative").exists()


def test_the_api_hands_the_sweep_its_confined_folder(tmp_path):
    """POST /start of a study stored with a relative storage_path launches `rnntune sweep --resume
    NAME --storage <root>/relative/dir2`: the sweep never resolves the stored value itself."""
    import json
    import stat
    import sys

    import httpx

    from tests.tuner.api.fixtures import live_app, make_study
    from tuner.api import ApiSettings, create_app
    from tuner.sweeps.launch.launcher import Launcher

    root = tmp_path / "storage"
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    make_study(db_url, "rel", Path("relative/dir2"), status="stopped")
    recorder = tmp_path / "recorder"
    argv_file = tmp_path / "argv.json"
    recorder.write_text(
        f"#!{sys.executable}\nimport json, sys\nopen({str(argv_file)!r}, 'w').write(json.dumps(sys.argv))\n"
    )
    recorder.chmod(recorder.stat().st_mode | stat.S_IEXEC)
    app = create_app(ApiSettings(db_url=db_url, storage_root=root))
    state = app.state.rnntune
    state.launcher = Launcher(db_url, on_exit=lambda handle, code: None, python=str(recorder))
    with live_app(app) as url:
        started = httpx.post(f"{url}/studies/rel/start")
        assert started.status_code == 202, started.text
        state.launcher.get("rel").process.wait(timeout=30)
    argv = json.loads(argv_file.read_text())
    assert argv[-4:] == ["--resume", "rel", "--storage", str((root / "relative" / "dir2").resolve())]
