"""Settings of the study API: where studies and checkpoints live, and the access tokens.

The database URL is the flag, else `$RNNTUNE_DB_URL`, else ./studies/rnntune.db (as for every
`rnntune` command, `tuner.study.resolve_db_url`); the checkpoint root is the flag, else ./studies.
Tokens only come from the environment (`RNNTUNE_API_TOKEN` guards every request that changes
anything; `RNNTUNE_API_READ_TOKEN`, when set, guards reads too) so they never show in a process list.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tuner.study import DEFAULT_STORAGE_ROOT, resolve_db_url


@dataclass(frozen=True)
class ApiSettings:
    db_url: str
    storage_root: Path
    api_token: str | None = None
    read_token: str | None = None

    @classmethod
    def from_env(
        cls, db_url: str | None = None, storage_root: str | os.PathLike | None = None
    ) -> "ApiSettings":
        return cls(
            db_url=resolve_db_url(db_url),
            storage_root=Path(storage_root or DEFAULT_STORAGE_ROOT).expanduser().resolve(),
            api_token=os.environ.get("RNNTUNE_API_TOKEN") or None,
            read_token=os.environ.get("RNNTUNE_API_READ_TOKEN") or None,
        )
