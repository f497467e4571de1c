"""Reading a study's TensorBoard runs back with TensorBoard's own event reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2


def read_run(run_dir: Path) -> tuple[dict[str, dict[int, float]], dict[str, Any], int]:
    """A run's scalars ({tag: {step: value}}), its HParams (name -> value) and its end status."""
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    scalars = {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}
    params: dict[str, Any] = {}
    status = 0
    for content in acc.PluginTagToContent("hparams").values():
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
        if data.HasField("session_start_info"):
            for name, value in data.session_start_info.hparams.items():
                params[name] = getattr(value, value.WhichOneof("kind"))
        if data.HasField("session_end_info"):
            status = data.session_end_info.status
    return scalars, params, status
