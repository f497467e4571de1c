"""Which MLflow tracking URIs a study may name, as pure decisions on strings and paths.

A tracking URI is a place the sweep writes to, so it is treated as the stored paths are
(`tuner.storage.confine`): a REST client may name only a URI the server's operator listed in
`RNNTUNE_MLFLOW_URIS`, or a local store (a `file:` or `sqlite:` URI, or a bare path) inside the
server's storage root. Any other URI would let a client send the server's requests to any address
it reaches, or write files anywhere. No path may name the study database itself (MLflow would add
its tables to it). Credentials never go in a URI (the spec is stored and shown): they come from
MLflow's own variables (`MLFLOW_TRACKING_TOKEN`, `..._USERNAME`/`..._PASSWORD`).

What is confined is the path the libraries will open, not the string: SQLAlchemy's URL parser
percent-decodes a `sqlite:` database (`%2e%2e` is `..`), and MLflow's `local_file_uri_to_path`
decodes `file:` URIs and bare paths, so `local_path` decodes each the way its library does and the
confinement resolves the result (`..` and symlinks). A URI with a control character or NUL, raw or
percent-encoded, is refused before any path is formed, and a `sqlite:` URI takes no query (with
`uri=true` SQLite would decode a `file:` database name once more itself).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse, urlsplit
from urllib.request import url2pathname

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from tuner.storage.confine import resolve_within

URIS_ENV = "RNNTUNE_MLFLOW_URIS"  # the URIs a REST client may name, separated by commas
# The schemes MLflow stores in the tracking server's database; anything else names a server.
_DATABASE_SCHEMES = ("postgresql", "mysql", "mssql", "sqlite")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def allowed_uris(environ: dict[str, str] | os._Environ[str] | None = None) -> tuple[str, ...]:
    """The URIs the operator allows REST clients to name (`RNNTUNE_MLFLOW_URIS`), normalised."""
    raw = (os.environ if environ is None else environ).get(URIS_ENV, "")
    return tuple(normalise(u) for u in raw.split(",") if u.strip())


def normalise(uri: str) -> str:
    """`uri` without surrounding space or a trailing slash, so `http://m:5000/` matches `http://m:5000`."""
    return uri.strip().rstrip("/") or uri.strip()


def local_path(uri: str) -> str | None:
    """The file or folder a local store writes (a `sqlite:` database, a `file:` URI, a bare path),
    decoded as the library that opens it decodes it (relative paths are relative to the sweep's
    working directory); None for a server, or a URI the libraries cannot parse."""
    try:
        parts = urlsplit(uri)  # the scheme as MLflow picks its store by it (lowercased)
    except ValueError:
        return None
    if parts.scheme.split("+")[0] == "sqlite":
        try:
            database = make_url(uri).database  # SQLAlchemy's own decoding of the database
        except (ArgumentError, ValueError):
            return None
        return database if database not in (None, "", ":memory:") else None
    if parts.scheme == "file" and uri.startswith("file:") and parts.netloc not in ("", "localhost"):
        return None  # a host: MLflow would drop it on POSIX and open the path here
    if parts.scheme in ("", "file") or len(parts.scheme) == 1:  # a one-letter scheme is a drive
        return mlflow_file_path(uri)
    return None


def mlflow_file_path(uri: str) -> str:
    """The path MLflow's file store opens for `uri`: `mlflow.utils.file_utils.local_file_uri_to_path`,
    the same two lines (urlparse's path of a URI spelled `file:`, else the string; then url2pathname,
    which percent-decodes on POSIX)."""
    path = urlparse(uri).path if uri.startswith("file:") else uri
    return url2pathname(path)


def text_problem(uri: str) -> str | None:
    """Why `uri` cannot be a tracking URI as text: a control character or NUL, as sent or
    percent-encoded (no library should be handed one); None when it has none."""
    if _CONTROL.search(uri) or _CONTROL.search(unquote(uri)):
        return "must not contain control characters or NUL, as sent or percent-encoded"
    if urlsplit(uri).scheme.split("+")[0] == "sqlite" and "?" in uri:
        return "a sqlite: store takes no query options"
    return None


def names_database(uri: str, database_url: str, base: Path) -> bool:
    """Whether the tracking `uri` names the study database `database_url` (the same SQLite file, or
    the same database on the same server), taking relative SQLite paths from `base`."""
    own, theirs = local_path(uri), _sqlite_file(database_url)
    try:
        if own is not None and theirs is not None:
            return _real(own, base) == _real(theirs, base)
        if urlsplit(uri).scheme.split("+")[0] not in _DATABASE_SCHEMES:
            return False
        a, b = make_url(uri), make_url(database_url)
    except (ArgumentError, ValueError):  # not a URL, or a NUL in a path: it names nothing
        return False
    return (a.host, a.port, a.database) == (b.host, b.port, b.database)


def rest_problem(uri: str, *, allowed: Iterable[str], storage_root: Path, database_url: str) -> str | None:
    """Why a REST client may not name `uri` (a sentence to follow `mlflow_uri: `), or None: it must
    be one the operator allowed, or a local store inside the storage root; never the study database."""
    try:
        if (problem := text_problem(uri)) is not None:
            return problem
    except ValueError:  # urlsplit: not a URI at all (an unclosed IPv6 bracket)
        return "is not a URI"
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
    except (ArgumentError, ValueError):
        return None
    return (
        url.database
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")
        else None
    )


def _real(path: str, base: Path) -> Path:
    p = Path(path).expanduser()
    return (p if p.is_absolute() else base / p).resolve()
