"""The model a dynamic-evaluation study evaluates: its `checkpoint` is a local path or an object's
URI (`s3://`, `gs://`, `abfs://`: a best.pt a study kept in an object store wrote), stored as `shown` gives it.

An object is downloaded by the process that needs it (the driver to check it at creation, each
trial in its own process, which may run on another node) with `object_store.local_copy`, into a
temporary folder removed afterwards: the bucket stays the only stored copy. The credentials and
endpoint come from that process's environment (`tuner.storage.object_backends.filesystem`).
"""

from __future__ import annotations

from pathlib import Path

from tuner.storage.object_store import is_uri, parse


def shown(checkpoint: str) -> str:
    """The checkpoint as a study stores it: an object's URI normalised, a local path made absolute."""
    if is_uri(checkpoint):
        return parse(checkpoint, "checkpoint").uri
    return str(Path(checkpoint).expanduser().resolve())
