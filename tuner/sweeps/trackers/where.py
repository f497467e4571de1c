"""Where a study's trackers log, for the sweep's header and `tensorboard --logdir` (no tracker
library imported: the plan of a sweep reads this before anything starts)."""

from __future__ import annotations

from pathlib import Path

from tuner.spec import SweepSpec

FOLDER = "tensorboard"  # the study's TensorBoard runs, under its storage folder


def logdir(storage_root: str | Path) -> Path:
    """Where a study's TensorBoard runs are, for `tensorboard --logdir`."""
    return Path(storage_root) / FOLDER


def describe(spec: SweepSpec, study_name: str, storage_root: Path) -> list[str]:
    """The sweep header's lines saying where the trials are logged."""
    lines = []
    if spec.tensorboard:
        lines.append(f"tensorboard: tensorboard --logdir {logdir(storage_root)}")
    if spec.mlflow_uri:
        lines.append(f"mlflow: experiment {study_name} at {spec.mlflow_uri}")
    return lines
