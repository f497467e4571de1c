"""TensorBoard runs written by `TensorBoardRuns`, read back with TensorBoard's event reader."""

from __future__ import annotations

import pytest
from tensorboard.plugins.hparams import api_pb2

from tests.tuner.sweeps.trackers.tensorboard_runs import read_run
from tuner.sweeps.trackers.records import Ending, Point
from tuner.sweeps.trackers.tensorboard import TensorBoardRuns, logdir


def test_one_run_per_trial_with_its_scalars_value_hparams_and_status(tmp_path):
    runs = TensorBoardRuns(tmp_path)
    runs.begin()
    runs.start_trial(0, {"learning_rate": 0.002, "cell": "lstm", "dropout": None})
    runs.log(0, Point(10, {"val_loss": 5.0, "train_loss": 5.2, "tokens_per_s": 900.0, "lr": 0.002}))
    runs.log(0, Point(20, {"val_loss": 4.5, "train_loss": 4.6, "tokens_per_s": 950.0, "lr": 0.002}))
    runs.start_trial(1, {"learning_rate": 0.003, "cell": "gru"})
    runs.log(1, Point(10, {"val_loss": 6.0}))
    runs.end_trial(0, Ending("COMPLETE", 4.5))
    runs.end_trial(1, Ending("FAIL", error="diverged"))
    runs.close("finished")

    folders = sorted(p.name for p in logdir(tmp_path).iterdir())
    assert folders == ["trial-0", "trial-1"]
    assert all(len(list((logdir(tmp_path) / f).glob("events.out.tfevents.*"))) == 1 for f in folders)
    scalars, params, status = read_run(logdir(tmp_path) / "trial-0")
    assert scalars["val_loss"] == {10: 5.0, 20: 4.5}
    assert scalars["train_loss"] == pytest.approx({10: 5.2, 20: 4.6})
    assert scalars["tokens_per_s"] == {10: 900.0, 20: 950.0}
    assert scalars["lr"] == pytest.approx({10: 0.002, 20: 0.002})
    assert scalars["value"] == {20: 4.5}
    assert params == pytest.approx({"learning_rate": 0.002, "cell": "lstm"})
    assert status == api_pb2.STATUS_SUCCESS
    scalars, params, status = read_run(logdir(tmp_path) / "trial-1")
    assert scalars == {"val_loss": {10: 6.0}}
    assert status == api_pb2.STATUS_FAILURE
