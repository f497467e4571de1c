"""Which MLflow tracking URIs a study may name, as pure decisions on strings and paths.

A tracking URI is a place the sweep writes to, so it is treated as the stored paths are
(`tuner.storage.confine`): a REST client may name only a URI the server's operator listed in
`RNNTUNE_MLFLOW_URIS`, or a local store (a `file:` or `sqlite:` URI, or a bare path) inside the
server's storage root. Any other URI would let a client send the server's requests to any address
it reaches, or write files anywhere. No path may name the study database itself (MLflow would add
its tables to it). Credentials never go in a URI (the spec is stored and shown): they come from
MLflow's own variables (`MLFLOW_TRACKING_TOKEN`, `..._USERNAME`/`..._PASSWORD`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from tuner.storage.confine import resolve_within

URIS_ENV = "RNNTUNE_MLFLOW_URIS"  # the URIs a REST client may name, separated by commas
# The schemes MLflow stores in the tracking server's database; anything else names a server.
_DATABASE_SCHEMES = ("postgresql", "mysql", "mssql", "sqlite")


def allowed_uris(environ: dict[str, str] | os._Environ[str] | None = None) -> tuple[str, ...]:
    """The URIs the operator allows REST clients to name (`RNNTUNE_MLFLOW_URIS`), normalised."""
    raw = (os.environ if environ is None else environ).get(URIS_ENV, "")
    return tuple(normalise(u) for u in raw.split(",") if u.strip())


def normalise(uri: str) -> str:
    """`uri` without surrounding space or a trailing slash, so `http://m:5000/` matches `http://m:5000`."""
    return uri.strip().rstrip("/") or uri.strip()


def local_path(uri: str) -> str | None:
    """The file or folder a local store writes (a `sqlite:` database, a `file:` URI, a bare path),
    as written (relative paths are relative to the sweep's working directory); None for a server."""
    if uri.startswith("sqlite:"):
        rest = uri[len("sqlite:") :].split("?", 1)[0]
        return rest[3:] if rest.startswith("///") else None  # sqlite:///rel.db, sqlite:////abs.db
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return parts.path if parts.netloc in ("", "localhost") else None
    if parts.scheme == "" or len(parts.scheme) == 1:  # a bare path (a one-letter scheme is a drive)
        return uri
    return None


def names_database(uri: str, database_url: str, base: Path) -> bool:
    """Whether the tracking `uri` names the study database `database_url` (the same SQLite file, or
    the same database on the same server), taking relative SQLite paths from `base`."""
    own, theirs = local_path(uri), _sqlite_file(database_url)
    if own is not None and theirs is not None:
        return _real(own, base) == _real(theirs, base)
    if urlsplit(uri).scheme.split("+")[0] not in _DATABASE_SCHEMES:
        return False
    try:
        a, b = make_url(uri), make_url(database_url)
    except ArgumentError:
        return False
    return (a.host, a.port, a.database) == (b.host, b.port, b.database)


def rest_problem(uri: str, *, allowed: Iterable[str], storage_root: Path, database_url: str) -> str | None:
    """Why a REST client may not name `uri` (a sentence to follow `mlflow_uri: `), or None: it must
    be one the operator allowed, or a local store inside the storage root; never the study database."""
    if names_database(uri, database_url, Path.cwd()):
        return "must not name the study database (MLflow would add its tables to it)"
    if normalise(uri) in set(allowed):
        return None
    path = local_path(uri)
    if path is not None:
        if resolve_within(path, (storage_root,), Path.cwd()) is None:
            return f"a local MLflow store must lie inside the server's storage root ({storage_root})"
        return None
    return (
        f"this server lets clients name only the MLflow servers its operator lists in {URIS_ENV} "
        "(or a file: or sqlite: store inside its storage root)"
    )


def artifact_location(uri: str, storage_folder: Path) -> str | None:
    """Where a new experiment keeps its artifacts (uploaded checkpoints) when `uri` is a local
    SQLite store: inside the study's storage folder, not MLflow's default `./mlruns` of whatever
    directory the sweep runs in. None: the store decides (a server, or a file store, which keeps
    them beside its runs)."""
    if not uri.startswith("sqlite:"):
        return None
    return (storage_folder / "mlflow-artifacts").resolve().as_uri()


def _sqlite_file(database_url: str) -> str | None:
    try:
        url = make_url(database_url)
    except ArgumentError:
        return None
    return (
        url.database
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")
        else None
    )


def _real(path: str, base: Path) -> Path:
    p = Path(path).expanduser()
    return (p if p.is_absolute() else base / p).resolve()
