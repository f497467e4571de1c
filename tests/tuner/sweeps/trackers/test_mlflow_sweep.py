"""`--mlflow-uri` against a real MLflow tracking server started here: one run per trial under the
study's parent run, with the trial's params and curve; a server that dies mid-sweep fails no trial
and is counted in the study's `tracker_failures`.

The test stops the module's server, so it runs last.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS
from tests.tuner.sweep_checks import check_trials
from tests.tuner.sweeps.trackers.mlflow_server import mlflow_server
from tuner.storage import study_attrs
from tuner.storage.study import load_study
from tuner.sweeps.drive.run import run_sweep
from tuner.sweeps.study.create import create_study

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


def test_each_trial_is_a_run_and_extensions_log_under_it_until_the_server_dies(tmp_path, ray_cluster, server):
    """One study, three in-process sweeps (the end-to-end run of `run_sweep`: create, run, extend):
    each trial is a run under the study's parent run with its params, curve and checkpoint; an
    extension leaves the finished trials unchanged and logs under the same parent; a server that
    dies mid-sweep fails no trial and is counted in `tracker_failures`."""
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    _create("ml", db, tmp_path / "store", server.uri, n_trials=3, parallel=2, mlflow_checkpoints=True)
    out = io.StringIO()
    outcome = run_sweep("ml", db, num_cpus=2, out=out)
    assert (outcome.status, outcome.finished, outcome.n_trials) == ("finished", 3, 3)
    text = out.getvalue()
    assert f"mlflow: experiment ml at {server.uri}" in text
    assert "done 3/3" in text and "best " in text
    assert len([line for line in text.splitlines() if "] done " in line]) >= 2  # live status lines
    study = load_study("ml", db)
    assert study.user_attrs["status"] == "finished"
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    check_trials(study)
    assert all(Path(t.user_attrs["run_dir"]).parent == tmp_path / "store" for t in study.trials)

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
    before = {t.number: (t.state, t.value, t.params, t.intermediate_values) for t in study.trials}

    # Extending the study: its finished trials are unchanged, the new trial logs under the same
    # experiment and parent run.
    outcome = run_sweep("ml", db, changes={"n_trials": 4}, num_cpus=2, out=io.StringIO())
    assert (outcome.status, outcome.finished) == ("finished", 4)
    study = load_study("ml", db)
    assert len(study.trials) == 4
    assert {t.number: (t.state, t.value, t.params, t.intermediate_values) for t in study.trials[:3]} == before
    check_trials(study)
    runs = client.search_runs([experiment.experiment_id])
    assert [r.info.run_id for r in runs if r.data.tags.get("rnntune.role") == "study"] == [parent.info.run_id]
    trial_runs = [r for r in runs if r.data.tags.get("rnntune.role") == "trial"]
    assert sorted(int(r.data.tags["rnntune.trial"]) for r in trial_runs) == [0, 1, 2, 3]

    # Extending it again, one trial at a time, while the server dies once the first new trial is in.
    done = threading.Event()

    def stop_after_the_next_trial() -> None:
        while not done.wait(0.2):
            trials = optuna.load_study(study_name="ml", storage=db).get_trials(deepcopy=False)
            if sum(t.state == TrialState.COMPLETE for t in trials) >= 5:
                server.stop()
                return

    watcher = threading.Thread(target=stop_after_the_next_trial, daemon=True)
    watcher.start()
    out = io.StringIO()
    try:
        outcome = run_sweep("ml", db, changes={"n_trials": 6, "parallel": 1}, num_cpus=2, out=out)
    finally:
        done.set()
        watcher.join(30)
    assert (outcome.status, outcome.finished) == ("finished", 6)
    study = load_study("ml", db)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 6
    failures = study.user_attrs[study_attrs.TRACKER_FAILURES]
    assert set(failures) == {"mlflow"} and failures["mlflow"] >= 1
    assert out.getvalue().count("warning: mlflow:") == 1, out.getvalue()
