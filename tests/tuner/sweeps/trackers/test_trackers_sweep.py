"""`--tensorboard` and `--wandb-project` (offline) in one real sweep: one TensorBoard run and one
W&B run per trial under the study's storage, whose validation curve is the study's intermediate
values and whose HParams (W&B: config) are the trial's params; each read back with its own
tool's reader (TensorBoard's event reader, W&B's transaction-log format)."""

from __future__ import annotations

import io

import pytest
from optuna.trial import TrialState
from tensorboard.plugins.hparams import api_pb2

from tests.conftest import TINY_SETTINGS
from tests.tuner.sweeps.trackers.tensorboard_runs import read_run
from tests.tuner.sweeps.trackers.wandb_records import runs_in
from tuner.storage import study_attrs
from tuner.storage.study import load_study
from tuner.sweeps.drive.run import run_sweep
from tuner.sweeps.study.create import create_study
from tuner.sweeps.trackers.tensorboard import logdir
from tuner.sweeps.trackers.wandb_runs import DIRECTORY


@pytest.mark.slow
def test_a_sweep_writes_one_run_per_trial_equal_to_the_study(tmp_path, ray_cluster, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")  # W&B's own switch: local files only
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    store = tmp_path / "store"
    create_study(
        "tb",
        storage_url=db,
        space="tiny",
        n_trials=3,
        parallel=2,
        scheduler="none",
        tensorboard=True,
        wandb_project="rnntune-tests",
        storage_path=store,
        overrides={"set": {**TINY_SETTINGS, "max_steps": 20}},
        seed=0,
    )
    out = io.StringIO()
    assert run_sweep("tb", db, num_cpus=2, out=out).status == "finished"
    assert f"tensorboard: tensorboard --logdir {logdir(store)}" in out.getvalue()
    study = load_study("tb", db)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    assert sorted(p.name for p in logdir(store).iterdir()) == ["trial-0", "trial-1", "trial-2"]
    for trial in study.trials:
        run = logdir(store) / f"trial-{trial.number}"
        assert len(list(run.glob("events.out.tfevents.*"))) == 1
        scalars, params, status = read_run(run)
        assert trial.intermediate_values and scalars["val_loss"] == pytest.approx(trial.intermediate_values)
        assert set(scalars["train_loss"]) == set(scalars["tokens_per_s"]) == set(trial.intermediate_values)
        assert scalars["lr"] and all(v > 0 for v in scalars["tokens_per_s"].values())
        assert list(scalars["value"].values()) == pytest.approx([trial.value])
        assert params == pytest.approx(trial.params)
        assert status == api_pb2.STATUS_SUCCESS
    runs = {run.name: run for run in runs_in(store / DIRECTORY)}
    assert sorted(runs) == ["trial-0", "trial-1", "trial-2"]
    for trial in study.trials:
        run = runs[f"trial-{trial.number}"]
        assert (run.project, run.group, run.exit_code) == ("rnntune-tests", "tb", 0)
        curve = {row["_step"]: row["val_loss"] for row in run.history}
        assert curve == pytest.approx(trial.intermediate_values)
        assert {k: run.config[k] for k in trial.params} == pytest.approx(trial.params)
        assert (run.summary["value"], run.summary["state"]) == (pytest.approx(trial.value), "COMPLETE")
    assert study_attrs.TRACKER_FAILURES not in study.user_attrs
