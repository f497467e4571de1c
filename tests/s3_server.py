"""An S3 server over HTTP on loopback (moto's server mode, as Ray Tune's own tests use) and the
environment that points rnntune at it: `--storage s3://...` is tested against a real endpoint."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator

import pytest

from tests.postgres import free_port

KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
_buckets = itertools.count()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """The URL of a moto S3 server started for this test session."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not a line per request in test logs
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def s3_env(s3_endpoint, monkeypatch) -> dict[str, str]:
    """The AWS_* variables that reach the server, set in this process; with `bucket`, a fresh one."""
    env = {**KEYS, "AWS_ENDPOINT_URL_S3": s3_endpoint}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def bucket(s3_env) -> str:
    """A new, empty bucket on the session's server."""
    import boto3

    name = f"rnntune-{next(_buckets)}"
    boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL_S3"]).create_bucket(Bucket=name)
    return name
