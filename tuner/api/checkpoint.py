"""Serving a trial's checkpoint safely: only regular files inside the study's storage root.

The path comes from the study database (trial user attr `checkpoint`), which anyone who can write
to the database controls, so it is resolved (symlinks and `..` included) and refused unless it
lies inside the storage root. The SHA-256 of a file is cached by (path, size, mtime).
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


class CheckpointUnavailable(LookupError):
    """The checkpoint is missing, not a regular file, or outside the storage root."""


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    size: int
    sha256: str
    config: dict[str, Any]


_digests: dict[tuple[str, int, int], str] = {}
_digest_lock = threading.Lock()


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve(raw: Any, root: Path) -> Path:
    """The real path of `raw` if it is a regular file inside `root`; raises otherwise."""
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        raise CheckpointUnavailable("the trial has no checkpoint path recorded")
    real_root = root.resolve()
    path = Path(raw)
    if not path.is_absolute():
        path = real_root / path
    real = path.resolve()
    if not _inside(real, real_root):
        raise CheckpointUnavailable(
            f"checkpoint {raw!r} is outside the study's storage root {str(real_root)!r}; refused"
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


def _config(path: Path, root: Path, fallback: dict[str, Any]) -> dict[str, Any]:
    """The run's resolved `config.yaml` beside the checkpoint, else `fallback` (the trial params)."""
    config_file = (path.parent / "config.yaml").resolve()
    if _inside(config_file, root.resolve()) and config_file.is_file():
        try:
            loaded = yaml.safe_load(config_file.read_text())
        except (OSError, yaml.YAMLError):
            loaded = None
        if isinstance(loaded, dict):
            return loaded
    return fallback


def locate(raw: Any, root: Path, params: dict[str, Any]) -> Checkpoint:
    path = resolve(raw, root)
    return Checkpoint(
        path=path,
        size=path.stat().st_size,
        sha256=sha256(path),
        config=_config(path, root, params),
    )


def headers(checkpoint: Checkpoint, trial_number: int, value: float) -> dict[str, str]:
    """Download headers: SHA-256 (hex, and as an RFC 9530 Repr-Digest), config as ASCII JSON."""
    raw_digest = bytes.fromhex(checkpoint.sha256)
    return {
        "X-Checkpoint-SHA256": checkpoint.sha256,
        "Repr-Digest": f"sha-256=:{base64.b64encode(raw_digest).decode()}:",
        "X-Trial-Number": str(trial_number),
        "X-Trial-Value": repr(float(value)),
        "X-Trial-Config": json.dumps(checkpoint.config, ensure_ascii=True, default=str, sort_keys=True),
    }


def storage_root(study_attrs: dict[str, Any], default: Path) -> Path:
    """The study's checkpoint root (`storage_path` attr), else the server's `--storage` root."""
    raw = study_attrs.get("storage_path")
    if isinstance(raw, str) and raw and "\x00" not in raw:
        return Path(os.path.expanduser(raw))
    return default
