"""`python_api.start` keeps its log under this process's storage root (RNNTUNE_STORAGE), as the API
keeps its own: a `storage_path` planted in the database never decides where a file is written."""

from __future__ import annotations

import pytest

from tests.tuner.api.fixtures import make_study
from tuner import python_api
from tuner.storage.study import STORAGE_ENV


def test_the_log_goes_under_the_storage_root_not_the_stored_path(tmp_path, monkeypatch):
    root, planted = tmp_path / "root", tmp_path / "elsewhere" / "deep"
    db = f"sqlite:///{tmp_path / 's.db'}"
    make_study(db, "odd", planted)  # its stored storage_path lies outside the root
    monkeypatch.setenv(STORAGE_ENV, str(root))
    background = python_api.start("odd", db=db)
    try:
        assert background.log.parent.name == "sweep-logs" and background.log.is_relative_to(root)
        assert background.wait(timeout=120) is not None  # a finished study's sweep exits at once
    finally:
        if background.running:
            background.stop(timeout_s=10)
    assert background.log.exists()
    assert not (tmp_path / "elsewhere").exists()


def test_an_unknown_study_is_an_error_before_a_child_starts(tmp_path, monkeypatch):
    monkeypatch.setenv(STORAGE_ENV, str(tmp_path / "root"))
    with pytest.raises(Exception, match="nope"):
        python_api.start("nope", db=f"sqlite:///{tmp_path / 's.db'}")
    assert not (tmp_path / "root").exists()
