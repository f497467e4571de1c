"""TensorBoard: one run per trial (STORAGE/tensorboard/trial-N), with the evaluation scalars
(`records.SCALARS`), the trial's value as it ends, and its hyperparameters for the HParams plugin
(table and parallel-coordinates views, with `val_loss` and `value` as its metrics).

tensorboardX's writer, not Ray Tune's `TBXLoggerCallback`: that one names runs by Ray's trial ids
in Ray's own folders, and a retried trial would share its run with the attempt it retries.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tensorboardX import SummaryWriter
from tensorboardX.proto.api_pb2 import Status
from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData, SessionEndInfo
from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboardX.summary import hparams

from tuner.sweeps.trackers.records import VALUE, Ending, Point
from tuner.sweeps.trackers.records import hparams as scalar_params
from tuner.sweeps.trackers.where import logdir
from tuner.sweeps.trial.lifecycle import METRIC

# The HParams plugin's session-end tag and status of each ending (tensorboard/plugins/hparams).
_END_TAG = "_hparams_/session_end_info"
_STATUS = {"COMPLETE": "STATUS_SUCCESS", "PRUNED": "STATUS_SUCCESS", "FAIL": "STATUS_FAILURE"}


class TensorBoardRuns:
    """Writes each trial's run in the study's storage folder."""

    name = "tensorboard"

    def __init__(self, storage_root: str | Path) -> None:
        self._root = logdir(storage_root)
        self._writers: dict[int, SummaryWriter] = {}
        self._last_step: dict[int, int] = {}

    def begin(self) -> None:
        self._root.mkdir(parents=True, exist_ok=True)

    def start_trial(self, number: int, params: Mapping[str, Any]) -> None:
        writer = SummaryWriter(logdir=str(self._root / f"trial-{number}"), flush_secs=10)
        self._writers[number] = writer
        experiment, session_start, _ = hparams(scalar_params(params), {METRIC: None, VALUE: None})
        writer.file_writer.add_summary(experiment)
        writer.file_writer.add_summary(session_start)

    def log(self, number: int, point: Point) -> None:
        writer = self._writers[number]
        for tag, value in point.scalars.items():
            writer.add_scalar(tag, value, point.step)
        self._last_step[number] = point.step

    def end_trial(self, number: int, ending: Ending) -> None:
        writer = self._writers.pop(number)
        step = self._last_step.pop(number, 0)
        if ending.value is not None:
            writer.add_scalar(VALUE, ending.value, step)
        writer.file_writer.add_summary(_session_end(_STATUS.get(ending.state, "STATUS_UNKNOWN")))
        writer.close()

    def close(self, status: str) -> None:
        for writer in self._writers.values():  # trials that never ended (a lost lease)
            writer.close()
        self._writers.clear()


def _session_end(status: str) -> Summary:
    """The HParams session-end summary with a trial's status (tensorboardX writes only success)."""
    content = HParamsPluginData(session_end_info=SessionEndInfo(status=Status.Value(status)), version=0)
    metadata = SummaryMetadata(
        plugin_data=SummaryMetadata.PluginData(plugin_name="hparams", content=content.SerializeToString())
    )
    return Summary(value=[Summary.Value(tag=_END_TAG, metadata=metadata)])
