"""Where a study's checkpoints live when that is an object store: `s3://`, `gs://` or
`abfs://BUCKET/PREFIX` parsed, its filesystem built from the environment (object_backends.py), and
every key a study names confined to its prefix.

The study database keeps object keys (as URIs), never the endpoint or the credentials: those come
from each process's environment (object_backends.py: the AWS SDK's variables for S3 and
S3-compatible servers such as MinIO, Google's Application Default Credentials for GCS, Azure's
for Azure Blob Storage). As with
local paths (confine.py), the database is data: a key it names is read or deleted only when it lies
inside the prefix the caller trusts (`ObjectStore.key`). Ray Tune writes its own checkpoints there
through the same filesystem (`RunConfig.storage_filesystem`).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tuner.errors import NotFound, StudyError
from tuner.storage.object_backends import ALIASES, BACKENDS, URI_FORMS, filesystem

ALLOWED = f"a local folder or one of {URI_FORMS} (an object store; docs/cluster.md)"

_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://(.*)", re.DOTALL)


class StorageRefused(StudyError):
    """A storage location or key that is malformed, of an unsupported scheme, or unreachable."""


class KeyRefused(NotFound):
    """An object key outside the prefix it must lie in, or not there (404)."""


def is_uri(value: str | os.PathLike[str]) -> bool:
    """Whether `value` is a URI (`scheme://...`) rather than a local path."""
    return _URI.match(os.fspath(value)) is not None


@dataclass(frozen=True)
class ObjectLocation:
    """A bucket and a prefix in it (no leading or trailing slash; empty for the whole bucket) in the
    object store `scheme` names (object_backends.BACKENDS)."""

    bucket: str
    prefix: str = ""
    scheme: str = "s3"

    @property
    def path(self) -> str:
        """The location as a pyarrow filesystem path: `bucket/prefix`."""
        return f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket

    @property
    def uri(self) -> str:
        return f"{self.scheme}://{self.path}"

    def __str__(self) -> str:
        return self.uri

    def child(self, *names: str) -> ObjectLocation:
        """The location `names` below this one; each name one plain path component."""
        for name in names:
            if not name or name in (".", "..") or "/" in name or "\x00" in name:
                raise StorageRefused(f"{name[:100]!r} is not a plain name inside {self.uri}")
        return ObjectLocation(self.bucket, "/".join(p for p in (self.prefix, *names) if p), self.scheme)

    def contains(self, other: ObjectLocation) -> bool:
        """Whether `other` is this location or lies below it (whole components only)."""
        if (other.scheme, other.bucket) != (self.scheme, self.bucket):
            return False
        return not self.prefix or other.prefix == self.prefix or other.prefix.startswith(self.prefix + "/")

    def confine(self, raw: Any, field: str) -> ObjectLocation:
        """`raw` (an object URI read from the study database) as a location inside this one;
        KeyRefused naming `field` when it is malformed or lies outside."""
        if not isinstance(raw, str) or not raw:
            raise KeyRefused(f"{field}: no object key is recorded")
        try:
            found = parse(raw, field)
        except StorageRefused as err:
            raise KeyRefused(str(err)) from None
        if not self.contains(found):
            raise KeyRefused(f"{field}: {raw[:200]!r} is outside the study's prefix {self.uri}; refused")
        return found


def parse(value: str | os.PathLike[str], field: str) -> ObjectLocation:
    """`value` as a `SCHEME://BUCKET/PREFIX` location of a supported object store; StorageRefused
    naming `field` and the allowed forms for another scheme, a bad bucket name, or a prefix with
    empty, `.` or `..` components."""
    text = os.fspath(value)
    found = _URI.match(text)
    if found is None:
        raise StorageRefused(f"{field}: {text[:200]!r} is not a URI; allowed: {ALLOWED}")
    scheme, rest = found.group(1).lower(), found.group(2)
    scheme = ALIASES.get(scheme, scheme)
    backend = BACKENDS.get(scheme)
    if backend is None:
        raise StorageRefused(
            f"{field}: {text[:200]!r} is a {scheme}:// URI, which rnntune does not support; allowed: {ALLOWED}"
        )
    bucket, _, prefix = rest.partition("/")
    prefix = prefix.rstrip("/")
    if not backend.bucket.fullmatch(bucket):
        raise StorageRefused(
            f"{field}: {text[:200]!r} names no valid bucket ({backend.bucket_rule}); allowed: {ALLOWED}"
        )
    parts = prefix.split("/") if prefix else []
    if any(p in ("", ".", "..") or "\x00" in p for p in parts):
        raise StorageRefused(
            f"{field}: {text[:200]!r} has an empty, `.` or `..` component; allowed: {ALLOWED}"
        )
    return ObjectLocation(bucket, prefix, scheme)


def location(value: str | os.PathLike[str], field: str) -> Path | ObjectLocation:
    """Where `field` says checkpoints go: a local folder (expanded, not resolved) or an object
    store location; StorageRefused naming `field` for a URI of another scheme."""
    return parse(value, field) if is_uri(value) else Path(os.fspath(value)).expanduser()


class ObjectStore:
    """A study's checkpoints under one object store location: its keys listed, read, written and
    deleted, each key confined to the location (`key`)."""

    def __init__(self, root: ObjectLocation, fs: Any | None = None) -> None:
        self.root = root
        self.fs = fs if fs is not None else filesystem(root.scheme)

    @property
    def _hint(self) -> str:
        return BACKENDS[self.root.scheme].hint

    def key(self, raw: Any, field: str) -> ObjectLocation:
        """`raw` confined to this store's root (`ObjectLocation.confine`)."""
        return self.root.confine(raw, field)

    def check(self, field: str) -> None:
        """StorageRefused naming `field` unless the bucket answers (endpoint and credentials work)."""
        from pyarrow import fs

        try:
            info = self.fs.get_file_info(self.root.bucket)
        except OSError as err:
            raise StorageRefused(
                f"{field}: cannot reach {self.root.uri}: {_first_line(err)}; {self._hint}"
            ) from None
        if info.type == fs.FileType.NotFound:
            word = BACKENDS[self.root.scheme].bucket_word
            raise StorageRefused(f"{field}: {word} {self.root.bucket!r} does not exist; {self._hint}")

    def sizes(self, under: ObjectLocation | None = None) -> dict[str, int]:
        """{URI: bytes} of every object below `under` (default: the root)."""
        from pyarrow import fs

        where = under or self.root
        selector = fs.FileSelector(where.path, recursive=True, allow_not_found=True)
        return {
            f"{where.scheme}://{info.path}": info.size or 0
            for info in self.fs.get_file_info(selector)
            if info.type == fs.FileType.File
        }

    def size(self, key: ObjectLocation) -> int | None:
        """The object's size, None when there is none."""
        from pyarrow import fs

        info = self.fs.get_file_info(key.path)
        return info.size if info.type == fs.FileType.File else None

    def open_read(self, key: ObjectLocation) -> IO[bytes]:
        """The object for reading; KeyRefused when there is none."""
        try:
            return self.fs.open_input_stream(key.path)
        except (FileNotFoundError, OSError) as err:
            raise KeyRefused(f"{key.uri}: cannot be read ({_first_line(err)})") from None

    def chunks(self, key: ObjectLocation, size: int = 1 << 20) -> Iterator[bytes]:
        with self.open_read(key) as stream:
            yield from iter(lambda: stream.read(size), b"")

    def upload(self, local: Path, key: ObjectLocation) -> None:
        """The local file `local` written as `key` (whole: an object store has no partial objects)."""
        with open(local, "rb") as source, self.fs.open_output_stream(key.path) as sink:
            for block in iter(lambda: source.read(1 << 20), b""):
                sink.write(block)

    def download(self, key: ObjectLocation, local: Path) -> None:
        """The object `key` as the local file `local`, replaced whole (written beside it first)."""
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = local.with_name(f".{local.name}.downloading")
        with open(tmp, "wb") as sink:
            for block in self.chunks(key):
                sink.write(block)
        os.replace(tmp, local)

    def delete(self, key: ObjectLocation) -> None:
        """Delete the object `key` (inside the root: `key` checked that); none there is no error."""
        if not self.root.contains(key):
            raise KeyRefused(f"{key.uri} is outside the study's prefix {self.root.uri}; refused")
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(key.path)


@contextlib.contextmanager
def local_copy(value: str, field: str = "checkpoint") -> Iterator[Path]:
    """`value` as a local file while the context lasts: a local path as it is, an object's URI
    downloaded into a temporary folder removed afterwards, so the bucket stays the only stored copy
    (StorageRefused naming `field` for another scheme or a malformed key; KeyRefused or OSError
    when it cannot be read)."""
    if not is_uri(value):
        yield Path(value).expanduser().resolve()
        return
    key = parse(value, field)
    with tempfile.TemporaryDirectory(prefix="rnntune-object-") as folder:
        local = Path(folder) / (key.prefix.rsplit("/", 1)[-1] or "object")
        ObjectStore(key).download(key, local)
        yield local


def _first_line(err: BaseException) -> str:
    return str(err).splitlines()[0][:300] if str(err) else type(err).__name__
