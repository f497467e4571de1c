"""Settings of the study API: where studies and checkpoints live, and the access tokens.

Flags win over environment variables: `--db` over `RNNTUNE_DB`, `--storage` over
`RNNTUNE_STORAGE`. Tokens only come from the environment (`RNNTUNE_API_TOKEN` guards every request
that changes anything; `RNNTUNE_API_READ_TOKEN`, when set, guards reads too) so they never show in
a process list.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DB_URL = "sqlite:///studies/rnntune.db"
DEFAULT_STORAGE = "studies"


@dataclass(frozen=True)
class ApiSettings:
    db_url: str
    storage_root: Path
    api_token: str | None = None
    read_token: str | None = None

    @classmethod
    def from_env(cls, db_url: str | None = None, storage_root: str | os.PathLike | None = None) -> "ApiSettings":
        return cls(
            db_url=db_url or os.environ.get("RNNTUNE_DB") or DEFAULT_DB_URL,
            storage_root=Path(storage_root or os.environ.get("RNNTUNE_STORAGE") or DEFAULT_STORAGE).resolve(),
            api_token=os.environ.get("RNNTUNE_API_TOKEN") or None,
            read_token=os.environ.get("RNNTUNE_API_READ_TOKEN") or None,
        )
