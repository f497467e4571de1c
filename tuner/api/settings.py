"""Settings of the study API: where studies, checkpoints and datasets live, who may call it.

The database URL is the flag, else `$RNNTUNE_DB_URL`, else ./studies/rnntune.db (as for every
`rnntune` command, `tuner.study.resolve_db_url`). The storage root (checkpoints are served only
from inside it, whatever the database says) is `--storage`, else `$RNNTUNE_STORAGE`, else ./studies.
The data roots (the only folders a request may name as `data_dir`) are `--data-root` (repeatable),
else `$RNNTUNE_DATA_ROOTS` (paths separated by `os.pathsep`); none by default. Tokens only come from
the environment so they never show in a process list: `RNNTUNE_API_TOKEN` guards every request that
changes anything; `RNNTUNE_API_READ_TOKEN` guards reads, and writes too when it is the only token.
Mutations must come from a Host in `allowed_hosts` (`$RNNTUNE_ALLOWED_HOSTS`, comma-separated;
by default only loopback names when the server listens on loopback, any otherwise).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.study import DEFAULT_STORAGE_ROOT, resolve_db_url

STORAGE_ENV = "RNNTUNE_STORAGE"
DATA_ROOTS_ENV = "RNNTUNE_DATA_ROOTS"
ALLOWED_HOSTS_ENV = "RNNTUNE_ALLOWED_HOSTS"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
# Largest request body accepted (bytes); a study definition is a few kB.
MAX_BODY_BYTES = 1_000_000


@dataclass(frozen=True)
class ApiSettings:
    db_url: str
    storage_root: Path
    api_token: str | None = None
    read_token: str | None = None
    data_roots: tuple[Path, ...] = ()
    allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS  # None: any Host
    max_body_bytes: int = MAX_BODY_BYTES

    @property
    def write_token(self) -> str | None:
        """The token that writes need: the write token, else the read token (a read token alone
        must not leave writes open), else none."""
        return self.api_token or self.read_token

    @classmethod
    def from_env(
        cls,
        db_url: str | None = None,
        storage_root: str | os.PathLike | None = None,
        data_roots: list[str] | None = None,
        host: str | None = None,
    ) -> ApiSettings:
        """Settings from the flags given, then the environment; `host` is the listening address."""
        roots = data_roots or [p for p in os.environ.get(DATA_ROOTS_ENV, "").split(os.pathsep) if p]
        hosts_env = [h.strip() for h in os.environ.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()]
        if hosts_env:
            hosts: tuple[str, ...] | None = None if "*" in hosts_env else tuple(hosts_env)
        else:
            hosts = LOOPBACK_HOSTS if host is None or host in LOOPBACK_HOSTS else None
        return cls(
            db_url=resolve_db_url(db_url),
            storage_root=_real(storage_root or os.environ.get(STORAGE_ENV) or DEFAULT_STORAGE_ROOT),
            api_token=os.environ.get("RNNTUNE_API_TOKEN") or None,
            read_token=os.environ.get("RNNTUNE_API_READ_TOKEN") or None,
            data_roots=tuple(_real(r) for r in roots),
            allowed_hosts=hosts,
        )


def _real(path: str | os.PathLike) -> Path:
    return Path(path).expanduser().resolve()


def resolve_within(raw: Any, roots: tuple[Path, ...], base: Path) -> Path | None:
    """The real path of `raw` (relative ones taken from `base`; symlinks and `..` resolved) if it
    lies inside one of `roots`, else None. Never touches what the path names beyond resolving it,
    so the answer says nothing about whether a file exists."""
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return None
    path = Path(raw).expanduser()
    real = (path if path.is_absolute() else base / path).resolve()
    for root in roots:
        real_root = root.resolve()
        if real == real_root or real_root in real.parents:
            return real
    return None
