"""Serving a trial's checkpoint and run config safely: only regular files inside the server's roots.

The paths come from the study database (trial user attr `checkpoint`), which anyone who can write to
the database controls. So the roots come from the server's configuration alone (`--storage`,
`$RNNTUNE_STORAGE`), never from the database, and every path is resolved (symlinks and `..`
included) and refused unless it lies inside them. The SHA-256 of a file is cached by
(path, size, mtime).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tuner.api.settings import resolve_within

# Above this many bytes the run config is not sent as a header (curl and proxies choke on big
# headers); the `X-Trial-Config-URL` header names the endpoint that serves it.
MAX_CONFIG_HEADER = 8192


class CheckpointUnavailable(LookupError):
    """The checkpoint is missing, not a regular file, or outside the server's roots."""


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    size: int
    sha256: str


_digests: dict[tuple[str, int, int], str] = {}
_digest_lock = threading.Lock()


def resolve(raw: Any, roots: tuple[Path, ...], base: Path) -> Path:
    """The real path of `raw` (relative to `base`) if it is a regular file inside `roots`."""
    if not isinstance(raw, str) or not raw:
        raise CheckpointUnavailable("the trial has no checkpoint path recorded")
    real = resolve_within(raw, roots, base)
    if real is None:
        shown = ", ".join(str(r) for r in roots)
        raise CheckpointUnavailable(
            f"checkpoint {raw!r} is outside the server's storage root ({shown}); refused"
        )
    if not real.is_file():
        raise CheckpointUnavailable(f"checkpoint {raw!r} does not exist (or is not a file)")
    return real


def sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _digest_lock:
        if key in _digests:
            return _digests[key]
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    with _digest_lock:
        _digests[key] = value
    return value


def locate(raw: Any, roots: tuple[Path, ...], base: Path) -> Checkpoint:
    path = resolve(raw, roots, base)
    return Checkpoint(path=path, size=path.stat().st_size, sha256=sha256(path))


def run_config(
    attrs: dict[str, Any], roots: tuple[Path, ...], base: Path, params: dict[str, Any]
) -> dict[str, Any]:
    """The run's resolved `config.yaml` (beside the checkpoint, else in the run folder) when it is
    inside `roots`, else `params` (the trial's sampled hyperparameters)."""
    folders = [
        os.path.dirname(attrs["checkpoint"]) if isinstance(attrs.get("checkpoint"), str) else None,
        attrs.get("run_dir"),
    ]
    for folder in folders:
        found = (
            resolve_within(os.path.join(folder, "config.yaml"), roots, base)
            if isinstance(folder, str)
            else None
        )
        if found is not None and found.is_file():
            try:
                loaded = yaml.safe_load(found.read_text())
            except (OSError, yaml.YAMLError):
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


def storage_root(study_attrs: dict[str, Any], default: Path) -> Path:
    """The study's `storage_path` attr, else `default`: where the launcher runs a sweep. Never a
    root to serve files from (that is the server's `--storage` alone)."""
    raw = study_attrs.get("storage_path")
    if isinstance(raw, str) and raw and "\x00" not in raw:
        return Path(os.path.expanduser(raw))
    return default
