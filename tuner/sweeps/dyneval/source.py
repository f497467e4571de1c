"""The model a dynamic-evaluation study evaluates, as a local file: its `checkpoint` is a local path
or an `s3://BUCKET/KEY` object (a best.pt a study kept in an object store wrote).

An object is downloaded by the process that needs it (the driver to check it at creation, each
trial in its own process, which may run on another node), into a temporary folder removed
afterwards: the bucket stays the only stored copy. The credentials and endpoint come from that
process's environment (`tuner.storage.object_backends.filesystem`).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tuner.storage.object_store import ObjectStore, is_uri, parse


def shown(checkpoint: str) -> str:
    """The checkpoint as a study stores it: an object's URI normalised, a local path made absolute."""
    if is_uri(checkpoint):
        return parse(checkpoint, "checkpoint").uri
    return str(Path(checkpoint).expanduser().resolve())


@contextlib.contextmanager
def local_copy(checkpoint: str) -> Iterator[Path]:
    """The checkpoint as a local file while the context lasts: a local path as it is, an `s3://`
    object downloaded into a temporary folder (StorageRefused naming `checkpoint` for another
    scheme or a malformed key; KeyRefused or OSError when it cannot be read)."""
    if not is_uri(checkpoint):
        yield Path(checkpoint).expanduser().resolve()
        return
    key = parse(checkpoint, "checkpoint")
    with tempfile.TemporaryDirectory(prefix="rnntune-checkpoint-") as folder:
        local = Path(folder) / (key.prefix.rsplit("/", 1)[-1] or "checkpoint.pt")
        ObjectStore(key).download(key, local)
        yield local
