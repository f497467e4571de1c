"""An MLflow URI with credentials is refused (the spec is stored with the study and shown by the
API), and the refusal itself never repeats the password."""

from __future__ import annotations

import pytest

from tuner.errors import InvalidInput
from tuner.spec.sweep_spec import validate


def test_a_uri_with_credentials_is_refused_without_repeating_them():
    with pytest.raises(InvalidInput) as refused:
        validate({"space": "tiny", "mlflow_uri": "https://bob:hunter2@mlflow.example:5000/x"})
    message = str(refused.value)
    assert message.startswith("mlflow_uri: ") and "must not hold credentials" in message
    assert "hunter2" not in message and "bob" not in message
    assert "got 'https://***@mlflow.example:5000/x'" in message
    assert validate({"space": "tiny", "mlflow_uri": "https://mlflow.example:5000"}).mlflow_uri
