"""`procedure: paper` end to end: a sweep (`run_sweep`, what `rnntune sweep` runs) on real Ray and a real SQLite study,
whose trials all diverge after their first evaluation (learning rate 1 with Adam's β1 = 0.99 and no
restart, `divergence_restores: 0`, as the Mogrifier paper's recipe; the other hyperparameters fixed
at values that diverge at step 16 across l2_penalty's range). The papers' procedure prunes none and
stores each COMPLETE at its best validation loss with the step it diverged at, as lamb's monitor
keeps its best; rnntune's procedure FAILs them (tests/tuner/sweeps/trial/test_lifecycle.py)."""

from __future__ import annotations

import io

import pytest
from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS
from tuner.spec import SweepSpec
from tuner.storage.study import load_study
from tuner.sweeps.drive.run import run_sweep
from tuner.sweeps.study.create import create_study

pytestmark = pytest.mark.slow
DIVERGING = {
    "max_steps": 32,
    "eval_every": 8,
    "learning_rate": 1.0,
    "adam_beta1": 0.99,
    "divergence_restores": 0,
    "input_embedding_ratio": 1.0,
    "input_dropout": 0.0,
    "inter_layer_dropout": 0.0,
    "state_dropout": 0.0,
    "output_dropout": 0.0,
    "mogrifier_rounds": 2,
    "mogrifier_rank": 4,
}


def test_the_papers_procedure_keeps_diverged_trials_at_their_best_and_prunes_none(tmp_path, ray_cluster):
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    create_study(
        "paper",
        storage_url=db,
        space="tiny",
        procedure="paper",
        n_trials=2,
        parallel=2,
        sampler="random",
        seed=3,
        storage_path=tmp_path / "paper",
        overrides={"set": {**TINY_SETTINGS, **DIVERGING}},
    )
    out = io.StringIO()
    assert run_sweep("paper", db, num_cpus=2, out=out).status == "finished"
    assert "procedure: paper - " in out.getvalue() and "early stopping: none" in out.getvalue()
    study = load_study("paper", db)
    spec = SweepSpec.of(study.user_attrs)
    assert (spec.procedure, spec.scheduler, spec.budget) == ("paper", "none", None)
    trials = study.trials
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2, [t.user_attrs for t in trials]
    for trial in trials:
        curve = trial.intermediate_values
        assert curve, trial.user_attrs  # evaluated before it diverged
        assert trial.value == min(curve.values())
        assert trial.user_attrs["best_step"] == min(curve, key=curve.__getitem__)
        assert trial.user_attrs["diverged_at"] > max(curve)  # stopped after its last evaluation
        assert trial.user_attrs["diverged_at"] < DIVERGING["max_steps"]  # it did not train to the end
        assert "error" not in trial.user_attrs
