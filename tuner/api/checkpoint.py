"""Serving a trial's checkpoint and run config safely: only regular files inside the server's roots.

The paths come from the study database (trial user attr `checkpoint`), which anyone who can write to
the database controls. So the roots come from the server's configuration alone (`--storage`,
`$RNNTUNE_STORAGE`), never from the database, and every file is opened through
`tuner.api.paths.open_within` (confined, no symlink followed while opening); the download is sent
from that open file, so what was checked is what is served. The SHA-256 of a file is cached by
(device, inode, size, mtime) for the `MAX_DIGESTS` most recently served files. A study kept in an
object store has its checkpoint keys confined the same way (`locate_object`): to the study's
location, itself inside the server's `--storage s3://...` root.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from tuner.api.paths import PathRefused, open_within
from tuner.storage import study_attrs, trial_attrs
from tuner.storage.object_backends import URI_FORMS
from tuner.storage.object_store import KeyRefused, ObjectLocation, ObjectStore, is_uri

# Above this many bytes the run config is not sent as a header (curl and proxies choke on big
# headers); the `X-Trial-Config-URL` header names the endpoint that serves it.
MAX_CONFIG_HEADER = 8192
# Digests kept (least recently used evicted): one per checkpoint served lately.
MAX_DIGESTS = 256
# A run config read from an object store larger than this is not read (a config.yaml is a few kB).
MAX_CONFIG_BYTES = 1 << 20
CHUNK = 1 << 20


class CheckpointUnavailable(PathRefused):
    """The checkpoint is missing, not a regular file, or outside the server's roots."""


@dataclass(frozen=True)
class Checkpoint:
    handle: BinaryIO
    path: Path
    size: int
    sha256: str

    def chunks(self) -> Iterator[bytes]:
        """The opened file's bytes from the start, closing it at the end (or when abandoned)."""
        try:
            self.handle.seek(0)
            yield from iter(lambda: self.handle.read(CHUNK), b"")
        finally:
            self.handle.close()


_digests: OrderedDict[tuple[int, int, int, int], str] = OrderedDict()
_digest_lock = threading.Lock()


def sha256(handle: BinaryIO) -> str:
    """SHA-256 (hex) of the open file, from the cache when its identity and mtime are unchanged."""
    info = os.fstat(handle.fileno())
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    with _digest_lock:
        if key in _digests:
            _digests.move_to_end(key)
            return _digests[key]
    digest = hashlib.sha256()
    handle.seek(0)
    for block in iter(lambda: handle.read(CHUNK), b""):
        digest.update(block)
    value = digest.hexdigest()
    with _digest_lock:
        _digests[key] = value
        while len(_digests) > MAX_DIGESTS:
            _digests.popitem(last=False)
    return value


def locate(raw: Any, roots: tuple[Path, ...], base: Path) -> Checkpoint:
    """The checkpoint `raw` (relative to `base`) opened inside `roots`; CheckpointUnavailable else."""
    try:
        handle, path = open_within(raw, roots, base)
    except PathRefused as err:
        raise CheckpointUnavailable(f"checkpoint: {err}") from None
    try:
        return Checkpoint(handle, path, os.fstat(handle.fileno()).st_size, sha256(handle))
    except OSError:
        handle.close()
        raise


def locate_object(raw: str, root: ObjectLocation | None, stored: Any) -> Checkpoint:
    """The checkpoint `raw` (an object key: `s3://`, `gs://`, `abfs://`) of a study kept in an object store,
    copied into an unnamed temporary file (its digest must be known before the body is sent): only
    when the study's stored location `stored` lies inside the server's object root `root` and the
    key inside the study's location; CheckpointUnavailable naming the rule otherwise."""
    if root is None:
        raise CheckpointUnavailable(
            f"checkpoint: {raw[:200]!r} is in an object store, and this server serves none "
            f"(serve with --storage one of {URI_FORMS})"
        )
    try:
        store = ObjectStore(root.confine(stored, "storage_path"))
        key = store.key(raw, "checkpoint")
        handle = tempfile.TemporaryFile()  # noqa: SIM115 (the Checkpoint closes it once sent)
    except KeyRefused as err:
        raise CheckpointUnavailable(str(err)) from None
    try:
        digest = hashlib.sha256()
        for block in store.chunks(key, CHUNK):
            digest.update(block)
            handle.write(block)
        size = handle.tell()
    except BaseException as err:
        handle.close()
        if isinstance(err, KeyRefused):
            raise CheckpointUnavailable(f"checkpoint: {err}") from None
        raise
    return Checkpoint(handle, Path(key.prefix), size, digest.hexdigest())


def object_config(attrs: dict[str, Any], root: ObjectLocation | None, stored: Any) -> dict[str, Any] | None:
    """The run's `config.yaml` beside an `s3://` checkpoint, read from the study's prefix under the
    same confinement as `locate_object` (and at most MAX_CONFIG_BYTES); None when the checkpoint
    is no key, the config is absent or too big, or a rule refuses it."""
    raw = trial_attrs.CHECKPOINT.of(attrs)
    if root is None or not isinstance(raw, str) or not is_uri(raw):
        return None
    try:
        store = ObjectStore(root.confine(stored, "storage_path"))
        folder = store.key(raw, "checkpoint").uri.rsplit("/", 1)[0]
        blocks, size = [], 0
        for block in store.chunks(store.key(f"{folder}/config.yaml", "config")):
            size += len(block)
            if size > MAX_CONFIG_BYTES:
                return None
            blocks.append(block)
        loaded = yaml.safe_load(b"".join(blocks))
    except (KeyRefused, OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    return loaded if isinstance(loaded, dict) else None


def run_config(
    attrs: dict[str, Any], roots: tuple[Path, ...], base: Path, params: dict[str, Any]
) -> dict[str, Any]:
    """The run's resolved `config.yaml` (beside the checkpoint, else in the run folder) when it is
    inside `roots`, else `params` (the trial's sampled hyperparameters)."""
    checkpoint = trial_attrs.CHECKPOINT.of(attrs)
    folders = [
        os.path.dirname(checkpoint) if isinstance(checkpoint, str) else None,
        trial_attrs.RUN_DIR.of(attrs),
    ]
    for folder in folders:
        if not isinstance(folder, str):
            continue
        try:
            handle, _ = open_within(os.path.join(folder, "config.yaml"), roots, base)
            with handle:
                loaded = yaml.safe_load(handle)
        except (PathRefused, OSError, yaml.YAMLError, UnicodeDecodeError):
            continue
        if isinstance(loaded, dict):
            return loaded
    return params


def headers(
    checkpoint: Checkpoint, trial_number: int, value: float, config: dict, config_url: str
) -> dict[str, str]:
    """Download headers: SHA-256 (hex, and as an RFC 9530 Repr-Digest), the run config as ASCII JSON
    when it is small (always its URL)."""
    raw_digest = bytes.fromhex(checkpoint.sha256)
    found = {
        "X-Checkpoint-SHA256": checkpoint.sha256,
        "Repr-Digest": f"sha-256=:{base64.b64encode(raw_digest).decode()}:",
        "X-Trial-Number": str(trial_number),
        "X-Trial-Value": repr(float(value)),
        "X-Trial-Config-URL": config_url,
    }
    text = json.dumps(config, ensure_ascii=True, default=str, sort_keys=True)
    if len(text) <= MAX_CONFIG_HEADER:
        found["X-Trial-Config"] = text
    return found


def storage_root(user_attrs: dict[str, Any], default: Path) -> Path | str:
    """The study's `storage_path` attr (an object store URI as it is), else `default`: where the
    launcher runs a sweep. Never a root to serve files from (that is the server's `--storage` alone)."""
    raw = study_attrs.STORAGE_PATH.of(user_attrs)
    if isinstance(raw, str) and raw and "\x00" not in raw:
        return raw if is_uri(raw) else Path(os.path.expanduser(raw))
    return default
