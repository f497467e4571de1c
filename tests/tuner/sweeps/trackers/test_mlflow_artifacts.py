"""An uploaded checkpoint with a local SQLite MLflow store lands in the study's storage folder, not
in MLflow's default `./mlruns` of the directory the sweep happens to run in; a study kept in an
object store has its checkpoint's object uploaded (moto's S3 server over HTTP)."""

from __future__ import annotations

import pytest

from tests import s3_server
from tuner.storage.object_store import ObjectStore, parse
from tuner.sweeps.trackers.records import Ending
from tuner.sweeps.trackers.uris import artifact_location

pytest.importorskip("mlflow")
s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures


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


def test_a_checkpoint_in_an_object_store_is_uploaded_to_mlflow(tmp_path, bucket):
    """`--mlflow-checkpoints` with `--storage s3://...`: the trial's checkpoint is the object's key
    (tagged as such), and the object itself becomes the run's artifact `checkpoint/best.pt`; the
    download it took is removed."""
    from mlflow.tracking import MlflowClient

    from tuner.sweeps.trackers.mlflow_runs import CHECKPOINT, MlflowRuns

    folder = tmp_path / "studies" / "s3"
    folder.mkdir(parents=True)
    (tmp_path / "best.pt").write_bytes(b"weights in the bucket")
    key = parse(f"s3://{bucket}/studies/s3/trial-0/best.pt", "t")
    ObjectStore(key).upload(tmp_path / "best.pt", key)
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    runs = MlflowRuns(uri, "s3", upload_checkpoints=True, artifacts=artifact_location(uri, folder))
    runs.begin()
    runs.start_trial(0, {"lr": 0.01})
    runs.end_trial(0, Ending(state="COMPLETE", value=1.0, checkpoint=key.uri))
    runs.close("finished")
    client = MlflowClient(uri)
    (run,) = client.search_runs(
        [client.get_experiment_by_name("s3").experiment_id], "tags.`rnntune.trial` = '0'"
    )
    assert run.data.tags[CHECKPOINT] == key.uri
    uploaded = list((folder / "mlflow-artifacts").rglob("best.pt"))
    assert [p.relative_to(folder / "mlflow-artifacts").parts[-2:] for p in uploaded] == [
        ("checkpoint", "best.pt")
    ]
    assert uploaded[0].read_bytes() == b"weights in the bucket"
