"""An Azure Blob Storage server over HTTP on loopback (Azurite, Microsoft's emulator that Azure's own
SDKs and pyarrow's Azure filesystem are tested against, from the npm registry: `make test` installs
it, AZURITE_BLOB names another copy) and the connection string that points rnntune at it:
`--storage abfs://...` is tested against a real endpoint, as `s3://` is against moto."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.emulator_process import emulator
from tests.postgres import free_port

ROOT = Path(__file__).resolve().parents[1]
INSTALLED = ROOT / ".venv" / "azurite" / "node_modules" / ".bin" / "azurite-blob"  # the Makefile's
# Azurite's documented development account (`UseDevelopmentStorage=true`): public, not a secret.
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

_containers = itertools.count()


def _binary() -> Path:
    found = os.environ.get("AZURITE_BLOB") or (str(INSTALLED) if INSTALLED.exists() else None)
    found = found or shutil.which("azurite-blob")
    if not found:
        pytest.skip(
            "Azurite is not installed (make test installs it: npm install azurite into .venv/azurite)"
        )
    return Path(found)


def connection_string(endpoint: str) -> str:
    return f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};BlobEndpoint={endpoint}/{ACCOUNT};"


def _lists(endpoint: str) -> bool:
    """Whether the server answers a listing, asked as rnntune asks it (pyarrow's Azure filesystem)."""
    from pyarrow import fs

    from tuner.storage.azure_blob import options_from_environment

    env = {"AZURE_STORAGE_CONNECTION_STRING": connection_string(endpoint)}
    fs.AzureFileSystem(**options_from_environment(env)).get_file_info(["probe"])
    return True


@pytest.fixture(scope="session")
def azure_endpoint(tmp_path_factory) -> Iterator[str]:
    """The blob endpoint of an Azurite started for this test session (objects in memory)."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    folder = tmp_path_factory.mktemp("azurite")
    log = folder / "server.log"
    command = [str(_binary()), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence"]
    # Keep-alive 1 s, not Azurite's 5: Azure's C++ SDK (pyarrow's client) waits on a pooled
    # connection until the server closes it after a chunked 404 that follows a "100 Continue" (a
    # lease release on a deleted blob, the last step of pyarrow's delete_file), about 1 in 15
    # deletes here, and then retries: 7 s a stalled delete with 5 s, 2 s with 1 s.
    command += ["--disableTelemetry", "--skipApiVersionCheck", "--blobKeepAliveTimeout", "1"]
    with emulator("Azurite", command, log, lambda: _lists(endpoint), cwd=folder):
        yield endpoint


@pytest.fixture
def azure_env(azure_endpoint, monkeypatch) -> dict[str, str]:
    """AZURE_STORAGE_CONNECTION_STRING, which points Azure's clients (and rnntune's) at the server."""
    value = connection_string(azure_endpoint)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", value)
    return {"AZURE_STORAGE_CONNECTION_STRING": value}


@pytest.fixture
def azure_container(azure_env) -> str:
    """A new, empty container on the session's server."""
    from tuner.storage.azure_blob import azure_filesystem

    name = f"rnntune-azure-{next(_containers)}"
    azure_filesystem().create_dir(name)
    return name
