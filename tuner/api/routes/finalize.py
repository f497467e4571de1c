"""Noise-aware finalisation over REST: launch `rnntune finalize` for a study, read its reruns' mean ± sd."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request, status
from starlette.concurrency import run_in_threadpool

from tuner.api import bounds
from tuner.api import serializers as views
from tuner.api.auth import require_read, require_write
from tuner.api.errors import Conflict
from tuner.api.finalize_models import FinalizeReport, FinalizeRequest, FinalizeStarted
from tuner.api.paths import study_location
from tuner.api.routes.common import (
    STUDY,
    StudyName,
    errors,
    json_body,
    live_runs,
    read_json,
    readable_row,
    state_of,
)
from tuner.storage import study_attrs
from tuner.sweeps.finalize import rerun as finalize
from tuner.sweeps.finalize.launch import FinalizeLauncher

router = APIRouter(prefix=f"{STUDY}/finalize", tags=["finalize"])
ERRORS = errors(401, 403, 404, 409, 413, 415, 422, 503)
_LOCK = threading.Lock()


def launcher_of(request: Request) -> FinalizeLauncher:
    """The app's finalize launcher, made on first use (kept beside the API state, one per app)."""
    with _LOCK:
        found = getattr(request.app.state, "rnntune_finalize", None)
        if found is None:
            found = FinalizeLauncher(state_of(request).settings.db_url)
            request.app.state.rnntune_finalize = found
        return found


@router.post(
    "",
    response_model=FinalizeStarted,
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(require_write)],
    responses=ERRORS,
    openapi_extra=json_body(FinalizeRequest),
)
async def start_finalize(request: Request, name: StudyName) -> dict:
    """Rerun the `top` best COMPLETE configurations with `seeds` fresh seeds each in the background
    (409 while a finalize run of the study goes on, or when it has no COMPLETE trial or stored space)."""
    body: FinalizeRequest = await read_json(request, FinalizeRequest)
    return await run_in_threadpool(_start, request, name, body)


def _start(request: Request, name: str, body: FinalizeRequest) -> dict:
    state = state_of(request)
    state.store.invalidate(name)
    row = readable_row(state, name)
    if not row.counts.get("COMPLETE"):
        raise Conflict(f"study {name!r} has no COMPLETE trial to rerun")
    if study_attrs.SPACE_DEF not in row.user_attrs:
        raise Conflict(
            f"study {name!r} was not created by rnntune (no stored space); its trials cannot be rerun"
        )
    # A path read from the database never decides where the server writes (409 outside its roots);
    # a study kept in an object store reruns in the server's local folder for it and uploads there.
    settings = state.settings
    where = study_location(row.user_attrs, settings.storage_root, name, settings.object_root)
    logs = where if isinstance(where, Path) else settings.storage_root / name
    bounds.check_runs(live_runs(request), settings)
    handle = launcher_of(request).start(
        name,
        row.user_attrs,
        top=body.top,
        seeds=body.seeds,
        parallel=body.parallel,
        storage_path=where,
        log_folder=logs,
    )
    state.store.invalidate(name)
    return {
        "name": name,
        "state": "queued",
        "top": body.top,
        "seeds": body.seeds,
        "parallel": body.parallel,
        "process": handle.as_dict(),
    }


@router.get("", response_model=FinalizeReport, dependencies=[Depends(require_read)], responses=ERRORS)
def get_finalize(request: Request, name: StudyName) -> dict:
    """Per configuration: reruns, n, mean ± sd of validation loss and of the headline figure (ppl or
    bpc), the tuning run's value and the gap; the best by rerun mean and the study's named best."""
    state = state_of(request)
    row = readable_row(state, name)
    attrs = row.user_attrs
    rows = views.clean(
        finalize.summarize(study_attrs.FINALIZE.of(attrs) or {}, finalize.word_level_of(attrs))
    )
    winner = finalize.best_by_rerun_mean(rows)
    best_by = study_attrs.BEST_BY.of(attrs) or "tuning"
    best: dict[str, Any] | None
    if best_by == "rerun_mean" and winner is not None:
        best = {"trial": winner["trial"], "value": winner["val_loss_mean"], "by": "rerun_mean"}
    else:
        tuned = state.store.snapshot(row).best
        best = {"trial": tuned.number, "value": views.finite(tuned.value), "by": "tuning"} if tuned else None
    run_status = study_attrs.FINALIZE_STATUS.of(attrs)
    handle = launcher_of(request).get(name)
    return {
        "name": name,
        "state": (run_status or {}).get("state", "none"),
        "status": views.clean(run_status),
        "best_by": best_by,
        "configurations": rows,
        "best_by_rerun_mean": winner,
        "best": best,
        "process": handle.as_dict() if handle else None,
    }
