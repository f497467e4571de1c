"""An uploaded checkpoint with a local SQLite MLflow store lands in the study's storage folder, not
in MLflow's default `./mlruns` of the directory the sweep happens to run in."""

from __future__ import annotations

import pytest

from tuner.sweeps.trackers.records import Ending
from tuner.sweeps.trackers.uris import artifact_location

pytest.importorskip("mlflow")


def test_checkpoints_of_a_sqlite_store_stay_in_the_study_folder(tmp_path, monkeypatch):
    from tuner.sweeps.trackers.mlflow_runs import MlflowRuns

    cwd, folder = tmp_path / "cwd", tmp_path / "studies" / "s1"
    cwd.mkdir()
    folder.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    checkpoint = folder / "trial-0" / "best.pt"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"weights")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    runs = MlflowRuns(uri, "s1", upload_checkpoints=True, artifacts=artifact_location(uri, folder))
    runs.begin()
    runs.start_trial(0, {"lr": 0.01})
    runs.end_trial(0, Ending(state="COMPLETE", value=1.0, checkpoint=str(checkpoint)))
    runs.close("finished")
    uploaded = list((folder / "mlflow-artifacts").rglob("best.pt"))
    assert [p.read_bytes() for p in uploaded] == [b"weights"]
    assert not (cwd / "mlruns").exists() and list(cwd.iterdir()) == []
