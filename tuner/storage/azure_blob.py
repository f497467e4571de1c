"""Azure Blob Storage (and Data Lake Gen2) for a study's checkpoints: pyarrow's `AzureFileSystem`
built from the process's environment, behind a filesystem that pickles as the recipe, not the key.

pyarrow's Azure filesystem takes an account key or SAS token as an argument and keeps it: pickled,
as Ray Tune pickles `RunConfig.storage_filesystem` into the experiment state it writes to the
store, the key would lie in the bucket beside the checkpoints. `environment_filesystem()` wraps it in
a `pyarrow.fs.PyFileSystem` whose handler pickles as nothing but its class, and builds the Azure
filesystem again from each process's own environment, as S3's and GCS's SDK lookups do.

The environment is the one Azure's own tools and adlfs (fsspec's Azure filesystem) read:
`AZURE_STORAGE_CONNECTION_STRING` (an account, its key or SAS, and its endpoint, e.g. Azurite's),
else `AZURE_STORAGE_ACCOUNT_NAME` with `AZURE_STORAGE_ACCOUNT_KEY` or `AZURE_STORAGE_SAS_TOKEN`,
else with no key: Azure AD through the SDK's DefaultAzureCredential (workload or managed identity,
`AZURE_CLIENT_ID`/`AZURE_TENANT_ID`/`AZURE_CLIENT_SECRET`).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from pyarrow import fs

CONNECTION_ENV = "AZURE_STORAGE_CONNECTION_STRING"
ACCOUNT_ENV = "AZURE_STORAGE_ACCOUNT_NAME"
KEY_ENV = "AZURE_STORAGE_ACCOUNT_KEY"
SAS_ENV = "AZURE_STORAGE_SAS_TOKEN"

# Azurite's documented development account, which `UseDevelopmentStorage=true` names (Azure's
# connection-string rules); a public constant of the emulator, not a credential.
_DEVELOPMENT = {
    "AccountName": "devstoreaccount1",
    "AccountKey": "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
    "BlobEndpoint": "http://127.0.0.1:10000/devstoreaccount1",
}


class AzureSettingsError(OSError):
    """The environment names no Azure account, or a connection string that cannot be read: the store
    cannot be reached, as when its endpoint does not answer (an OSError, as pyarrow raises then)."""


def parse_connection_string(text: str) -> dict[str, str]:
    """A connection string's `Name=value;` pairs (a value may hold `=`, as a SAS token does)."""
    pairs: dict[str, str] = {}
    for number, part in enumerate(text.split(";"), 1):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        if not sep or not name.strip():  # named by its place: the part may be a pasted key
            raise AzureSettingsError(f"{CONNECTION_ENV}: part {number} is not a Name=value pair")
        pairs[name.strip()] = value.strip()
    if pairs.get("UseDevelopmentStorage", "").lower() == "true":
        return {**_DEVELOPMENT, **{k: v for k, v in pairs.items() if k != "UseDevelopmentStorage"}}
    return pairs


def _authorities(account: str, pairs: dict[str, str]) -> dict[str, str]:
    """pyarrow's endpoint options for a connection string's endpoint: an authority starting with `.`
    is a suffix after the account (`.blob.core.windows.net`), another one a host that takes the
    account in its path (Azurite's `127.0.0.1:10000/devstoreaccount1`), as Arrow's AzureOptions read them."""
    endpoint = pairs.get("BlobEndpoint")
    if endpoint:
        parts = urlsplit(endpoint)
        host = parts.netloc
        blob = host[len(account) :] if host.startswith(f"{account}.") else host
        dfs = blob.replace(".blob.", ".dfs.", 1) if blob.startswith(".") else blob
        scheme = parts.scheme or "https"
    elif pairs.get("EndpointSuffix"):
        blob, dfs = f".blob.{pairs['EndpointSuffix']}", f".dfs.{pairs['EndpointSuffix']}"
        scheme = pairs.get("DefaultEndpointsProtocol", "https")
    else:
        return {}
    return {
        "blob_storage_authority": blob,
        "dfs_storage_authority": dfs,
        "blob_storage_scheme": scheme,
        "dfs_storage_scheme": scheme,
    }


def options_from_environment(env: dict[str, str] | os._Environ[str] = os.environ) -> dict[str, Any]:
    """`pyarrow.fs.AzureFileSystem`'s keyword arguments from `env` (the module docstring's order)."""
    connection = env.get(CONNECTION_ENV, "").strip()
    if connection:
        pairs = parse_connection_string(connection)
        account = pairs.get("AccountName", "")
        if not account:
            raise AzureSettingsError(f"{CONNECTION_ENV} names no AccountName")
        options: dict[str, Any] = {"account_name": account, **_authorities(account, pairs)}
        if pairs.get("AccountKey"):
            options["account_key"] = pairs["AccountKey"]
        elif pairs.get("SharedAccessSignature"):
            options["sas_token"] = pairs["SharedAccessSignature"]
        return options
    account = env.get(ACCOUNT_ENV, "").strip()
    if not account:
        raise AzureSettingsError(f"no Azure account: neither {ACCOUNT_ENV} nor {CONNECTION_ENV} is set")
    options = {"account_name": account}
    if env.get(KEY_ENV, "").strip():
        options["account_key"] = env[KEY_ENV].strip()
    elif env.get(SAS_ENV, "").strip():
        options["sas_token"] = env[SAS_ENV].strip()
    return options


def azure_filesystem() -> fs.AzureFileSystem:
    """pyarrow's Azure filesystem from this process's environment (holding its key, if any)."""
    return fs.AzureFileSystem(**options_from_environment())


def environment_filesystem() -> fs.PyFileSystem:
    """The Azure filesystem behind a `PyFileSystem` that pickles without any credential."""
    return fs.PyFileSystem(FromEnvironment())


class FromEnvironment(fs.FileSystemHandler):
    """Every call forwarded to pyarrow's Azure filesystem, built from the environment on first use;
    pickled, only the class travels (`__reduce__`), so each process unpickling it reads its own."""

    def __init__(self) -> None:
        self._fs: fs.AzureFileSystem | None = None

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (FromEnvironment, ())

    @property
    def inner(self) -> fs.AzureFileSystem:
        if self._fs is None:
            self._fs = azure_filesystem()
        return self._fs

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(type(self))

    def get_type_name(self) -> str:
        return "abfs-from-environment"

    def normalize_path(self, path: str) -> str:
        return self.inner.normalize_path(path)

    def get_file_info(self, paths: list[str]) -> list[fs.FileInfo]:
        return self.inner.get_file_info(paths)

    def get_file_info_selector(self, selector: fs.FileSelector) -> list[fs.FileInfo]:
        return self.inner.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.inner.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.inner.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.inner.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError("refused: that would delete every container of the storage account")

    def delete_file(self, path: str) -> None:
        self.inner.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.inner.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.inner.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        return self.inner.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        return self.inner.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        return self.inner.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self.inner.open_append_stream(path, metadata=metadata)
