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


@pytest.mark.parametrize(
    "uri",
    ["https://mlflow.example/?token=s3cret", "http://m:5000/api#s3cret", "sqlite:////tmp/m.db?key=s3cret"],
)
def test_a_uri_with_a_query_or_fragment_is_refused_and_masked(uri):
    """Tokens travel in query strings: refused, and the refusal does not repeat them."""
    with pytest.raises(InvalidInput) as refused:
        validate({"space": "tiny", "mlflow_uri": uri})
    message = str(refused.value)
    assert message.startswith("mlflow_uri: ") and "query string" in message
    assert "s3cret" not in message and "?***" in message
