"""The service's stated bounds on what requests may make it hold or run, each a setting with a
documented default (docs/api.md), each refusal naming the field or setting and the limit.

* `max_studies` (`RNNTUNE_MAX_STUDIES`, 10,000): studies in the database; `POST /studies` past it
  is a 409 (the listing, analyses and retention all scale with it).
* `max_space_bytes` (`RNNTUNE_MAX_SPACE_BYTES`, 65,536): an inline search space's JSON; a 422.
* `max_runs` (`RNNTUNE_MAX_RUNS`, 8): sweep and finalize processes this server runs at once; a
  start past it is a 409 (each is a Ray driver and, for finalize, trainings on this machine).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException, status

from tuner.api.settings import ApiSettings


def check_space_size(space: Any, settings: ApiSettings) -> None:
    """422 when an inline space (a mapping; a space name is bounded by its pattern) is larger than
    `max_space_bytes` as compact JSON."""
    if not isinstance(space, dict):
        return
    size = len(json.dumps(space, separators=(",", ":"), default=str).encode())
    if size > settings.max_space_bytes:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"body.space: the inline space is {size:,} bytes of JSON; at most {settings.max_space_bytes:,} "
            f"(RNNTUNE_MAX_SPACE_BYTES)",
        )


def check_study_count(count: int, settings: ApiSettings) -> None:
    """409 when the database already holds `max_studies` studies."""
    if count >= settings.max_studies:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"studies: this server holds at most {settings.max_studies:,} studies and has {count:,} "
            f"(RNNTUNE_MAX_STUDIES); remove old studies or raise the limit",
        )


def check_runs(running: int, settings: ApiSettings) -> None:
    """409 when this server already runs `max_runs` sweep and finalize processes."""
    if running >= settings.max_runs:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"runs: this server runs at most {settings.max_runs} sweep and finalize processes at once and "
            f"runs {running} (RNNTUNE_MAX_RUNS); stop one or wait for one to end",
        )
