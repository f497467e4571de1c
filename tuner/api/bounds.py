"""The service's stated bounds on what requests may make it hold or run, each a setting with a
documented default (docs/api.md), each refusal naming the field or setting and the limit.

* `max_studies` (`RNNTUNE_MAX_STUDIES`, 10,000): studies in the database; `POST /studies` past it
  is a 409 (the listing, analyses and retention all scale with it).
* `max_space_bytes` (`RNNTUNE_MAX_SPACE_BYTES`, 65,536): an inline search space's JSON; a 422.
* `max_runs` (`RNNTUNE_MAX_RUNS`, 8): sweep and finalize processes this server runs at once; a
  start past it is a 409 (each is a Ray driver and, for finalize, trainings on this machine).
* `max_trials_per_cpu` (`RNNTUNE_MAX_TRIALS_PER_CPU`, 4): the floor of `cpus_per_trial` is its
  inverse (0.25), so that no study packs hundreds of trainings on a few cores; a 422 at creation,
  a 409 at start for a study created elsewhere (the CLI) with less.
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


def check_cpus_per_trial(cpus_per_trial: float, settings: ApiSettings, field: str, status_code: int) -> None:
    """`status_code` (422 for a request's body, 409 for a stored study) when `cpus_per_trial` is below
    1 / `max_trials_per_cpu`; `field` names where it came from."""
    floor = 1 / settings.max_trials_per_cpu
    if cpus_per_trial < floor:
        raise HTTPException(
            status_code,
            f"{field}: {cpus_per_trial:g} is below this server's floor of {floor:g} CPU per trial "
            f"(RNNTUNE_MAX_TRIALS_PER_CPU={settings.max_trials_per_cpu} trials per CPU); ask for at least {floor:g}",
        )
