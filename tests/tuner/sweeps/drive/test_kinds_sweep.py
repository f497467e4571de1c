"""A tiny real sweep of each kind that no other end-to-end test runs (tests/tuner/policies/test_kinds.py
lists which test runs each kind): real Ray, real SQLite, the real trainer on tiny settings."""

from __future__ import annotations

import io

import pytest
from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS
from tuner.storage.study import load_study
from tuner.sweeps.drive.run import run_sweep
from tuner.sweeps.study.create import create_study

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("scheduler", ["asha", "median", "hyperband"])
def test_a_tiny_sweep_of_the_kind(scheduler, tmp_path, ray_cluster):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    create_study(
        scheduler,
        storage_url=db,
        space="tiny",
        n_trials=4,
        parallel=2,
        scheduler=scheduler,
        sampler="random",
        seed=1,
        storage_path=tmp_path / "store",
        overrides={"set": TINY_SETTINGS},
    )
    out = io.StringIO()
    outcome = run_sweep(scheduler, db, num_cpus=2, out=out)
    assert outcome.status == "finished", (outcome.error, out.getvalue())
    assert f"scheduler {scheduler} " in out.getvalue()
    states = {t.state for t in load_study(scheduler, db).trials}
    assert len(load_study(scheduler, db).trials) == 4
    assert states <= {TrialState.COMPLETE, TrialState.PRUNED} and TrialState.COMPLETE in states
