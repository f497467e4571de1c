"""The Ray Tune callback that feeds the trackers a sweep's spec asks for, on the driver (so the
logs stay on the storage host in a cluster): each trial under the study's trial number (a retry
is a run of its own), its evaluations as the searcher records them, its ending as the study is
told it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from optuna.trial import FrozenTrial
from ray.tune import Callback

from tuner.spec import SweepSpec
from tuner.storage.study import value_of
from tuner.sweeps.drive.searcher import StudySearcher
from tuner.sweeps.trackers.guard import Guard, Tracker
from tuner.sweeps.trackers.records import Point, ending, point
from tuner.sweeps.trackers.uris import artifact_location
from tuner.sweeps.trial.lifecycle import METRIC


def open_trackers(spec: SweepSpec, study_name: str, storage_root: Path) -> list[Tracker]:
    """The trackers `spec` asks for (none by default)."""
    trackers: list[Tracker] = []
    if spec.tensorboard:
        from tuner.sweeps.trackers.tensorboard import TensorBoardRuns  # tensorboardX imports PyTorch

        trackers.append(TensorBoardRuns(storage_root))
    if spec.mlflow_uri:  # its client's presence was checked before Ray started (execute.py)
        from tuner.sweeps.trackers.mlflow_runs import MlflowRuns  # the optional dependency

        artifacts = artifact_location(spec.mlflow_uri, storage_root)
        trackers.append(MlflowRuns(spec.mlflow_uri, study_name, spec.mlflow_checkpoints, artifacts))
    if spec.wandb_project:  # likewise checked
        from tuner.sweeps.trackers.wandb_runs import WandbRuns  # the optional dependency

        trackers.append(WandbRuns(spec.wandb_project, study_name, storage_root))
    return trackers


class TrackerCallback(Callback):
    """Sends each trial's evaluations and ending to every tracker, through its `Guard`."""

    def __init__(self, searcher: StudySearcher, trackers: list[Tracker], warn: Callable[[str], None]) -> None:
        self._searcher = searcher
        self._guards = [Guard(t, warn) for t in trackers]
        self._logged: dict[int, set[int]] = {}  # trial number -> the steps logged
        searcher.told.append(self._told)

    def __getstate__(self) -> dict[str, Any]:
        return {}  # Tune saves its callbacks with the experiment; the study is the state

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        live = self._searcher.live.get(trial.trial_id)
        found = point(result)
        if live is None or found is None:
            return
        number = live.trial.number
        if number not in self._logged:
            self._logged[number] = set()
            self._send("start_trial", number, dict(live.params))
            # A retry's curve so far, copied from the attempt it continues (searcher `_resume_from`).
            for step, value in sorted(live.curve.items()):
                if step < found.step:
                    self._log(number, Point(step, {METRIC: value}))
        self._log(number, found)

    def _log(self, number: int, found: Point) -> None:
        if found.step not in self._logged[number]:
            self._logged[number].add(found.step)
            self._send("log", number, found)

    def _told(self, trial: FrozenTrial) -> None:
        if self._logged.pop(trial.number, None) is not None:
            self._send("end_trial", trial.number, ending(trial.state.name, value_of(trial), trial.user_attrs))

    def _send(self, method: str, *args: Any) -> None:
        for guard in self._guards:
            guard.call(method, *args)

    def close(self, status: str) -> dict[str, int]:
        """End the trackers' logging (waiting a bounded time); the failures of each, by name."""
        return {guard.name: guard.close(status) for guard in self._guards}
