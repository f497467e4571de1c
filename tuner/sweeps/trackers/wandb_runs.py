"""Weights & Biases: one run per trial in the project the sweep names, grouped by study (W&B's
`group`, the study's name), with the trial's hyperparameters as its config, its curves as its
history (W&B's `step` is the training step), and its value, state, best checkpoint and error in
its summary.

Our own writer on `wandb.init`, not Ray's `WandbLoggerCallback` (a run per Ray trial id, started
in the trial's worker) nor Optuna's `WeightsAndBiasesCallback` (final values only): the same
record as the other trackers, written on the driver. The entity, the API key and the mode
(`online`, `offline`, `disabled`) come from W&B's own environment (`WANDB_ENTITY`,
`WANDB_API_KEY`, `WANDB_MODE`), never from the study. Each run is opened with the driver's
console, system metrics and code left alone (`console="off"`, no stats or code saving): a tracker
is a library call inside the sweep, not a process-wide hook.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import wandb

from tuner.sweeps.trackers.records import VALUE, Ending, Point
from tuner.sweeps.trackers.records import hparams as scalar_params

# The exit code W&B records for each trial ending (0: the run finished; 1: it did not).
_EXIT = {"COMPLETE": 0, "PRUNED": 1, "FAIL": 1}
DIRECTORY = "wandb"  # under the study's storage folder: W&B's local files (offline runs included)


class WandbRuns:
    """Logs a study's trials as runs of the W&B project `project`, grouped by the study."""

    name = "wandb"

    def __init__(self, project: str, study_name: str, storage_root: Path) -> None:
        self._project = project
        self._study = study_name
        self._dir = storage_root / DIRECTORY
        self._runs: dict[int, Any] = {}

    def begin(self) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)

    def start_trial(self, number: int, params: Mapping[str, Any]) -> None:
        self._runs[number] = wandb.init(
            project=self._project,
            group=self._study,
            job_type="trial",
            name=f"trial-{number}",
            config={**scalar_params(params), "rnntune.study": self._study, "rnntune.trial": number},
            dir=str(self._dir),
            reinit="create_new",  # several trials in flight: one run each, none global
            settings=wandb.Settings(
                console="off", silent=True, save_code=False, x_disable_stats=True, x_save_requirements=False
            ),
        )

    def log(self, number: int, point: Point) -> None:
        self._runs[number].log(dict(point.scalars), step=point.step)

    def end_trial(self, number: int, ending: Ending) -> None:
        run = self._runs.pop(number)
        summary: dict[str, str | float] = {"state": ending.state}
        if ending.value is not None:
            summary[VALUE] = ending.value
        if ending.checkpoint:
            summary["checkpoint"] = ending.checkpoint
        if ending.error:
            summary["error"] = ending.error[:5000]
        run.summary.update(summary)
        run.finish(exit_code=_EXIT.get(ending.state, 1))

    def close(self, status: str) -> None:
        for run in self._runs.values():  # trials that never ended (a lost lease, a stopped sweep)
            run.summary.update({"state": f"sweep {status}"})
            run.finish(exit_code=1)
        self._runs.clear()
