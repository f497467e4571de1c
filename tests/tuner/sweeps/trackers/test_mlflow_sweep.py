"""`--mlflow-uri` against a real MLflow tracking server started here: one run per trial under the
study's parent run, with the trial's params and curve; a server that dies mid-sweep fails no trial
and is counted in the study's `tracker_failures`.

Both tests share the module's server; the second stops it, so it runs last.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS
from tests.tuner.sweeps.trackers.mlflow_server import mlflow_server
from tuner import study_attrs
from tuner.storage.study import load_study
from tuner.sweeps.create import create_study
from tuner.sweeps.sweep import run_sweep

pytestmark = pytest.mark.slow
MlflowClient = pytest.importorskip("mlflow.tracking").MlflowClient


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with mlflow_server(tmp_path_factory.mktemp("mlflow")) as running:
        yield running


@pytest.fixture(autouse=True)
def quick_failures(monkeypatch):
    """A dead server fails each MLflow call at once instead of after minutes of retries."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")


def _create(name: str, db: str, store: Path, uri: str, **fields) -> None:
    create_study(
        name,
        storage_url=db,
        space="tiny",
        scheduler="none",
        mlflow_uri=uri,
        storage_path=store,
        overrides={"set": {**TINY_SETTINGS, "max_steps": 20}},
        seed=0,
        **fields,
    )


def test_each_trial_is_a_run_with_its_params_and_curve(tmp_path, ray_cluster, server):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    _create("ml", db, tmp_path / "store", server.uri, n_trials=3, parallel=2, mlflow_checkpoints=True)
    out = io.StringIO()
    assert run_sweep("ml", db, num_cpus=2, out=out).status == "finished"
    assert f"mlflow: experiment ml at {server.uri}" in out.getvalue()
    study = load_study("ml", db)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3

    client = MlflowClient(tracking_uri=server.uri)
    experiment = client.get_experiment_by_name("ml")
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("rnntune.role") == "study"]
    assert parent.info.status == "FINISHED"
    by_trial = {
        int(r.data.tags["rnntune.trial"]): r
        for r in runs
        if r is not parent and r.data.tags.get("rnntune.role") == "trial"
    }
    assert sorted(by_trial) == [0, 1, 2]
    for trial in study.trials:
        run = by_trial[trial.number]
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.tags["rnntune.study"] == "ml"
        assert run.info.status == "FINISHED"
        assert run.data.params == {k: str(v) for k, v in trial.params.items()}
        history = client.get_metric_history(run.info.run_id, "val_loss")
        assert {m.step: m.value for m in history} == pytest.approx(trial.intermediate_values)
        assert {m.step for m in client.get_metric_history(run.info.run_id, "train_loss")} == set(
            trial.intermediate_values
        )
        assert run.data.metrics["value"] == pytest.approx(trial.value)
        assert run.data.tags["rnntune.checkpoint"] == trial.user_attrs["checkpoint"]
        uploaded = [f.path for f in client.list_artifacts(run.info.run_id, "checkpoint")]
        assert uploaded == ["checkpoint/best.pt"]
    assert study_attrs.TRACKER_FAILURES not in study.user_attrs

    # Extending the study logs the new trial under the same experiment and parent run.
    assert run_sweep("ml", db, changes={"n_trials": 4}, num_cpus=2, out=io.StringIO()).status == "finished"
    runs = client.search_runs([experiment.experiment_id])
    assert [r.info.run_id for r in runs if r.data.tags.get("rnntune.role") == "study"] == [parent.info.run_id]
    trial_runs = [r for r in runs if r.data.tags.get("rnntune.role") == "trial"]
    assert sorted(int(r.data.tags["rnntune.trial"]) for r in trial_runs) == [0, 1, 2, 3]


def test_a_server_down_mid_sweep_fails_no_trial_and_is_counted(tmp_path, ray_cluster, server):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    _create("down", db, tmp_path / "store", server.uri, n_trials=3, parallel=1)
    done = threading.Event()

    def stop_after_first_trial() -> None:
        while not done.wait(0.2):
            trials = optuna.load_study(study_name="down", storage=db).get_trials(deepcopy=False)
            if any(t.state == TrialState.COMPLETE for t in trials):
                server.stop()
                return

    watcher = threading.Thread(target=stop_after_first_trial, daemon=True)
    watcher.start()
    out = io.StringIO()
    try:
        outcome = run_sweep("down", db, num_cpus=2, out=out)
    finally:
        done.set()
        watcher.join(30)
    assert (outcome.status, outcome.finished) == ("finished", 3)
    study = load_study("down", db)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    failures = study.user_attrs[study_attrs.TRACKER_FAILURES]
    assert set(failures) == {"mlflow"} and failures["mlflow"] >= 1
    assert out.getvalue().count("warning: mlflow:") == 1, out.getvalue()
