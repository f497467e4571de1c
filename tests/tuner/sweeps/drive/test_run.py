"""Short real sweeps in-process: real Ray, real SQLite, the real trainer on tiny settings."""

from __future__ import annotations

import io
import os

import pytest
from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS
from tuner.storage.study import load_study
from tuner.sweeps.drive.run import run_sweep
from tuner.sweeps.study.create import create_study


@pytest.mark.slow
def test_sweep_whose_every_trial_fails_ends_failed_and_says_why(tmp_path, ray_cluster):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    empty = tmp_path / "no-ptb-here"
    empty.mkdir()
    create_study(
        "broken",
        storage_url=db,
        space="tiny",
        n_trials=2,
        parallel=2,
        scheduler="none",
        storage_path=tmp_path / "store",
        overrides={"set": {**TINY_SETTINGS, "dataset": "ptb", "data_dir": str(empty)}},
    )
    outcome = run_sweep("broken", db, num_cpus=2, out=io.StringIO())
    assert (outcome.status, outcome.finished, outcome.best) == ("failed", 2, None)
    assert outcome.error.startswith("every trial FAILed (2); first error: DataError: ")
    study = load_study("broken", db)
    assert study.user_attrs["status"] == "failed"
    assert [t.state for t in study.trials] == [TrialState.FAIL, TrialState.FAIL]
    for t in study.trials:
        assert t.user_attrs["error"].startswith("DataError: ")
        assert "does not exist" in t.user_attrs["error"]
        assert not t.user_attrs.get("needs_retry")


def test_resume_of_a_finished_study_does_nothing(tmp_path):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    study = create_study("done", storage_url=db, space="tiny", n_trials=1, storage_path=tmp_path / "s")
    t = study.ask()
    study.tell(t, 1.0)
    outcome = run_sweep("done", db, out=io.StringIO())
    assert outcome.status == "finished" and outcome.finished == 1
    assert len(load_study("done", db).trials) == 1


def test_missing_data_dir_is_refused_before_ray_starts(tmp_path):
    from tuner.storage.study import StudyError

    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    create_study(
        "nodata",
        storage_url=db,
        space="mogrifier_lstm",
        n_trials=1,
        overrides={"set": {"data_dir": str(tmp_path / "missing")}},
    )
    with pytest.raises(StudyError, match=r"data_dir .* does not exist; pass --set data_dir=PATH"):
        run_sweep("nodata", db, out=io.StringIO())
    study = load_study("nodata", db)
    assert study.user_attrs["status"] == "created" and study.trials == []


@pytest.mark.slow
def test_embedded_ray_runs_with_token_auth(ray_cluster):
    """Ray >= 2.59 turns token auth on for clusters ray.init() starts; ours gets an ephemeral token."""
    import ray

    if os.environ.get("RAY_AUTH_MODE") == "disabled":
        pytest.skip("token auth explicitly disabled in this environment")

    @ray.remote
    def auth_mode():
        return os.environ.get("RAY_AUTH_MODE")

    assert ray.get(auth_mode.remote()) == "token"
