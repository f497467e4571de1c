"""Whether the trackers a spec asks for are installed: checked when a study is created and again
before its sweep starts (the driver may run where the creator did not), so a missing optional
client is refused by its field's name rather than failing the sweep later."""

from __future__ import annotations

import importlib.util

from tuner.errors import InvalidInput
from tuner.spec import SweepSpec

MLFLOW_MISSING = "mlflow_uri: needs the MLflow client, which is not installed: pip install 'rnntune[mlflow]'"


def check_available(spec: SweepSpec) -> None:
    """InvalidInput naming the field when a tracker the spec asks for is not installed."""
    if spec.mlflow_uri and importlib.util.find_spec("mlflow") is None:
        raise InvalidInput(MLFLOW_MISSING)
