"""The object stores a study's checkpoints may live in, one row per URI scheme: how its pyarrow
filesystem is built from the process's environment, which bucket names it takes, and which
environment variables carry its endpoint and credentials.

Ray Tune reads and writes the same stores through `RunConfig.storage_filesystem` (pyarrow's S3 and
GCS filesystems are what its `pyarrow.fs.FileSystem.from_uri` builds for `s3://` and `gs://`). Each
filesystem leaves the credentials to its SDK's own lookup, so none is held in the object, which Ray
pickles into its experiment state; only an endpoint travels with it. pyarrow's Azure filesystem
takes its key as an argument, so Azure's is wrapped to pickle as the recipe (azure_blob.py).
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Backend:
    """One object store kind, `SCHEME://BUCKET/PREFIX` (its scheme is its key in BACKENDS)."""

    bucket: re.Pattern[str]
    bucket_rule: str  # the bucket rule in words, for a refusal
    env_prefixes: tuple[str, ...]  # variables a process rnntune starts needs to reach the store
    hint: str  # what to set when the store cannot be reached
    make: Callable[[], Any]
    bucket_word: str = "bucket"  # what the store calls a bucket


def _endpoint(value: str) -> tuple[str, str]:
    """(scheme, host:port) of an endpoint given as a URL or a bare host:port (https then)."""
    parts = urlsplit(value if "://" in value else f"https://{value}")
    return parts.scheme or "https", parts.netloc


# S3 and S3-compatible servers (MinIO, Ceph, R2): the AWS SDK's variables; the first endpoint set wins.
S3_ENDPOINT_ENVS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
S3_REGION_ENVS = ("AWS_DEFAULT_REGION", "AWS_REGION")
S3_DEFAULT_REGION = "us-east-1"


def s3_filesystem() -> Any:
    """pyarrow's S3 filesystem: region and endpoint from the environment, keys by the AWS SDK's
    lookup (environment, profile, instance role)."""
    from pyarrow import fs

    region = next((os.environ[e] for e in S3_REGION_ENVS if os.environ.get(e)), S3_DEFAULT_REGION)
    options: dict[str, Any] = {"region": region, "connect_timeout": 5, "request_timeout": 30}
    endpoint = next((os.environ[e] for e in S3_ENDPOINT_ENVS if os.environ.get(e)), None)
    if endpoint:
        scheme, host = _endpoint(endpoint)
        options.update(scheme=scheme, endpoint_override=host)
    return fs.S3FileSystem(**options, retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=3))


# Google Cloud Storage: an emulator through STORAGE_EMULATOR_HOST, the variable Google's own storage
# clients (google-cloud-storage, gcsfs) read; else Application Default Credentials
# (GOOGLE_APPLICATION_CREDENTIALS, Workload Identity on GKE, the metadata server).
GCS_EMULATOR_ENV = "STORAGE_EMULATOR_HOST"
GCS_RETRY_S = 30  # pyarrow's client otherwise retries a transient error for 15 minutes


def gcs_filesystem() -> Any:
    """pyarrow's GCS filesystem: anonymous against an emulator, else Application Default Credentials."""
    from pyarrow import fs

    retry = datetime.timedelta(seconds=GCS_RETRY_S)
    emulator = os.environ.get(GCS_EMULATOR_ENV)
    if emulator:
        scheme, host = _endpoint(emulator)
        return fs.GcsFileSystem(anonymous=True, scheme=scheme, endpoint_override=host, retry_time_limit=retry)
    return fs.GcsFileSystem(retry_time_limit=retry)


def abfs_filesystem() -> Any:
    """Azure Blob Storage: the account, its endpoint and its key or SAS from the environment (azure_blob.py)."""
    from tuner.storage import azure_blob

    return azure_blob.environment_filesystem()


BACKENDS = {
    "s3": Backend(  # S3 or an S3-compatible store
        bucket=re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]"),
        bucket_rule="3-63 of a-z 0-9 . -",
        env_prefixes=("AWS_",),
        hint=(
            "set AWS_ENDPOINT_URL_S3 (for MinIO or another S3-compatible server), AWS_ACCESS_KEY_ID, "
            "AWS_SECRET_ACCESS_KEY and AWS_DEFAULT_REGION in the environment (docs/cluster.md)"
        ),
        make=s3_filesystem,
    ),
    "gs": Backend(  # Google Cloud Storage
        bucket=re.compile(r"[a-z0-9][a-z0-9._\-]{1,61}[a-z0-9]"),
        bucket_rule="3-63 of a-z 0-9 . _ -",
        env_prefixes=("GOOGLE_", "GCE_METADATA_", GCS_EMULATOR_ENV),
        hint=(
            "set GOOGLE_APPLICATION_CREDENTIALS to a service account's key file, or run where "
            "Application Default Credentials answer (Workload Identity on GKE); "
            f"{GCS_EMULATOR_ENV} for an emulator (docs/cluster.md)"
        ),
        make=gcs_filesystem,
    ),
    "abfs": Backend(  # Azure Blob Storage (Data Lake Gen2 too): abfs://CONTAINER/PREFIX
        bucket=re.compile(r"(?!.*--)[a-z0-9][a-z0-9\-]{1,61}[a-z0-9]"),
        bucket_rule=(
            "a container: 3-63 of a-z 0-9 -, no `--`; the account comes from AZURE_STORAGE_ACCOUNT_NAME "
            "or AZURE_STORAGE_CONNECTION_STRING, not the URI"
        ),
        env_prefixes=("AZURE_",),
        hint=(
            "set AZURE_STORAGE_CONNECTION_STRING (an account, its key and, for Azurite, its endpoint), or "
            "AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_TOKEN or an "
            "Azure AD identity (docs/cluster.md)"
        ),
        make=abfs_filesystem,
        bucket_word="container",
    ),
}


# Other names of a scheme for the same store, as pyarrow's FileSystem.from_uri (and so Ray Tune) or
# fsspec (adlfs's `az://`) take them.
ALIASES = {"gcs": "gs", "abfss": "abfs", "az": "abfs"}


# The URI forms of every store, for help texts and refusals.
URI_FORMS = ", ".join(f"{scheme}://BUCKET/PREFIX" for scheme in BACKENDS)


def filesystem(scheme: str) -> Any:
    """The pyarrow filesystem of the object store `scheme` names, from this process's environment."""
    return BACKENDS[scheme].make()
