"""MLflow: one experiment per study (named after it), a parent run for the study, and one child
run per trial with its hyperparameters, its curves as metric histories, its final value, its
state, and its best checkpoint's path (or the checkpoint itself as an artifact when asked).

Our own writer on `MlflowClient`, not Ray's `MLflowLoggerCallback` (runs named by Ray's trial ids,
no parent run) nor Optuna's `MLflowCallback` (only `study.optimize`'s final values, no curves).
Resuming a study reuses its experiment and parent run (found by tag).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from tuner.storage.object_store import local_copy
from tuner.sweeps.trackers.records import VALUE, Ending, Point
from tuner.sweeps.trackers.records import hparams as scalar_params

# Tags naming what a run is: the study's parent run (`ROLE` = "study") or one trial's.
ROLE, STUDY, TRIAL = "rnntune.role", "rnntune.study", "rnntune.trial"
CHECKPOINT = "rnntune.checkpoint"
# The MLflow status of each trial ending and of each sweep ending.
_TRIAL_STATUS = {"COMPLETE": "FINISHED", "PRUNED": "KILLED", "FAIL": "FAILED"}
_SWEEP_STATUS = {"finished": "FINISHED", "stopped": "KILLED", "failed": "FAILED"}


class MlflowRuns:
    """Logs a study's trials to the MLflow tracking server at `uri`."""

    name = "mlflow"

    def __init__(
        self, uri: str, study_name: str, upload_checkpoints: bool = False, artifacts: str | None = None
    ) -> None:
        self._uri = uri
        self._artifacts = artifacts  # a new experiment's artifact location (uris.artifact_location)
        self._study = study_name
        self._upload = upload_checkpoints
        self._client: MlflowClient | None = None
        self._experiment = ""
        self._parent = ""
        self._runs: dict[int, str] = {}

    @property
    def client(self) -> MlflowClient:
        if self._client is None:
            raise RuntimeError("not begun: the experiment and parent run could not be opened")
        return self._client

    def begin(self) -> None:
        client = MlflowClient(tracking_uri=self._uri)
        experiment = client.get_experiment_by_name(self._study)
        self._experiment = (
            experiment.experiment_id
            if experiment is not None
            else client.create_experiment(self._study, artifact_location=self._artifacts)
        )
        found = client.search_runs([self._experiment], f"tags.`{ROLE}` = 'study'", max_results=1)
        if found:
            self._parent = found[0].info.run_id
            client.update_run(self._parent, status="RUNNING")
        else:
            tags = {ROLE: "study", STUDY: self._study}
            self._parent = client.create_run(self._experiment, tags=tags, run_name=self._study).info.run_id
        self._client = client

    def start_trial(self, number: int, params: Mapping[str, Any]) -> None:
        tags = {"mlflow.parentRunId": self._parent, ROLE: "trial", STUDY: self._study, TRIAL: str(number)}
        run = self.client.create_run(self._experiment, tags=tags, run_name=f"trial-{number}")
        self._runs[number] = run.info.run_id
        values = [Param(k, str(v)) for k, v in scalar_params(params).items()]
        self.client.log_batch(run.info.run_id, params=values)

    def log(self, number: int, point: Point) -> None:
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, point.step) for k, v in point.scalars.items()]
        self.client.log_batch(self._runs[number], metrics=metrics)

    def end_trial(self, number: int, ending: Ending) -> None:
        run = self._runs.pop(number)
        if ending.value is not None:
            self.client.log_metric(run, VALUE, ending.value)
        if ending.checkpoint:
            self.client.set_tag(run, CHECKPOINT, ending.checkpoint)
            if self._upload:  # an object store's key is downloaded for the upload, then removed
                with local_copy(ending.checkpoint) as local:
                    self.client.log_artifact(run, str(local), artifact_path="checkpoint")
        if ending.error:
            self.client.set_tag(run, "rnntune.error", ending.error[:5000])
        self.client.set_terminated(run, status=_TRIAL_STATUS.get(ending.state, "FAILED"))

    def close(self, status: str) -> None:
        for run in self._runs.values():  # trials that never ended (a lost lease)
            self.client.set_terminated(run, status="KILLED")
        self._runs.clear()
        self.client.set_terminated(self._parent, status=_SWEEP_STATUS.get(status, "KILLED"))
