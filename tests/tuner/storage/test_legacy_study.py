"""A study written by the previous main (separate attributes, no `spec`) loads and resumes.

`data/legacy-main.db` was written by that main's `create_study` (space tiny, sampler gp_bohb, 3
trials of which 2 COMPLETE, reduction factor 4, patience 9, keep_top 2, max_steps set to 100).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import optuna
import pytest

from tuner.samplers import DEFAULT_SAMPLER, RETIRED_SAMPLERS
from tuner.spec import SweepSpec
from tuner.storage import study_attrs
from tuner.sweeps.drive.run import run_sweep

FIXTURE = Path(__file__).parent / "data" / "legacy-main.db"


@pytest.fixture
def legacy(tmp_path) -> str:
    path = tmp_path / "legacy.db"
    shutil.copy(FIXTURE, path)
    return f"sqlite:///{path}"


def test_the_spec_is_read_from_the_old_attributes(legacy):
    attrs = optuna.load_study(study_name="legacy-main", storage=legacy).user_attrs
    assert study_attrs.SPEC not in attrs
    spec = SweepSpec.of(attrs)
    assert (spec.space, spec.n_trials, spec.parallel, spec.seed) == ("tiny", 3, 2, 11)
    assert (spec.reduction_factor, spec.grace_steps, spec.brackets) == (4, 25, 1)
    assert (spec.patience, spec.keep_top) == (9, 2)
    assert spec.overrides.set == {"max_steps": 100}
    assert spec.sampler == RETIRED_SAMPLERS.get("gp_bohb", "gp_bohb")
    assert (spec.cpus_per_trial, spec.gpus_per_trial) == (1.0, 0.0)


def test_resuming_stores_the_spec_and_keeps_the_trials(legacy, tmp_path):
    outcome = run_sweep("legacy-main", legacy, changes={"n_trials": 2}, storage_path=tmp_path / "s")
    assert (outcome.status, outcome.finished, outcome.n_trials) == ("finished", 2, 2)
    study = optuna.load_study(study_name="legacy-main", storage=legacy)
    stored = SweepSpec.of(study.user_attrs)
    assert study.user_attrs[study_attrs.SPEC]["version"] == 1
    assert (stored.n_trials, stored.reduction_factor, stored.keep_top, stored.seed) == (2, 4, 2, 11)
    assert [t.value for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))] == [5.0, 4.0]
    if "gp_bohb" in RETIRED_SAMPLERS:
        assert stored.sampler == DEFAULT_SAMPLER
        assert "gp_bohb" in study.user_attrs["sampler_note"]


def test_an_unsafe_change_is_refused_by_name(legacy):
    with pytest.raises(ValueError, match="--sampler"):
        run_sweep("legacy-main", legacy, changes={"sampler": "tpe"})
