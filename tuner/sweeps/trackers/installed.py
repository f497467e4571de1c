"""Whether the trackers a spec asks for can run: installed, and not writing into the study
database. Checked when a study is created and again before its sweep starts (the driver may run
where the creator did not), so a missing optional client is refused by its field's name rather
than failing the sweep later."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tuner.errors import InvalidInput
from tuner.spec import SweepSpec
from tuner.sweeps.trackers.uris import names_database

MLFLOW_MISSING = "mlflow_uri: needs the MLflow client, which is not installed: pip install 'rnntune[mlflow]'"
WANDB_MISSING = "wandb_project: needs the W&B client, which is not installed: pip install 'rnntune[wandb]'"


def check_available(spec: SweepSpec, database_url: str | None = None) -> None:
    """InvalidInput naming the field when a tracker the spec asks for is not installed, or when its
    MLflow URI names the study database `database_url`."""
    if spec.mlflow_uri and importlib.util.find_spec("mlflow") is None:
        raise InvalidInput(MLFLOW_MISSING)
    if spec.wandb_project and importlib.util.find_spec("wandb") is None:
        raise InvalidInput(WANDB_MISSING)
    if spec.mlflow_uri and database_url and names_database(spec.mlflow_uri, database_url, Path.cwd()):
        raise InvalidInput("mlflow_uri: must not name the study database (MLflow would add its tables to it)")
