"""Studies: list, create, inspect, start and stop their sweeps."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request, status
from starlette.concurrency import run_in_threadpool

from tuner.api import actions, views
from tuner.api.auth import require_read, require_write
from tuner.api.checkpoint import storage_root
from tuner.api.creation import create
from tuner.api.models import Action, CreateStudy, ErrorBody, StudyDetail, StudyPage
from tuner.api.state import ApiState

router = APIRouter(prefix="/studies", tags=["studies"])
StudyName = Annotated[str, Path(max_length=512, description="The study's name.")]
ERRORS = {code: {"model": ErrorBody} for code in (401, 404, 409, 422, 503)}


def _state(request: Request) -> ApiState:
    return request.app.state.rnntune


@router.get("", response_model=StudyPage, dependencies=[Depends(require_read)], responses=ERRORS)
async def list_studies(
    request: Request,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> dict:
    """Studies, oldest first, with status, trial counts by state and best objective."""
    state = _state(request)
    rows = state.store.fresh_rows() or await run_in_threadpool(state.store.rows)
    page = rows[offset : offset + limit]
    return {
        "total": len(rows),
        "offset": offset,
        "limit": limit,
        "items": [views.study_summary(r, state.launcher.get(r.name)) for r in page],
    }


def detail(state: ApiState, name: str) -> dict:
    row = state.store.row(name)
    snapshot = state.store.snapshot(row)
    best = snapshot.best
    summary = views.study_summary(row, state.launcher.get(name))
    summary["best_value"] = views.finite(best.value) if best else None
    handle = state.launcher.get(name)
    return {
        **summary,
        "storage_path": str(storage_root(row.user_attrs, state.settings.storage_root / name)),
        "user_attrs": views.clean(row.user_attrs),
        "best_trial": views.trial_summary(best) if best else None,
        "process": handle.as_dict() if handle else None,
    }


@router.post(
    "",
    response_model=StudyDetail,
    status_code=status.HTTP_201_CREATED,
    dependencies=[Depends(require_write)],
    responses=ERRORS,
)
def create_study(request: Request, body: CreateStudy) -> dict:
    """Create a study from a search space (name or inline), sampler, trial count and overrides."""
    state = _state(request)
    create(state, body)
    return detail(state, body.name)


@router.get("/{name}", response_model=StudyDetail, dependencies=[Depends(require_read)], responses=ERRORS)
def get_study(request: Request, name: StudyName) -> dict:
    """Status, counts by state, progress, best trial and the sweep process (if this API runs it)."""
    return detail(_state(request), name)


@router.post(
    "/{name}/start",
    response_model=Action,
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(require_write)],
    responses=ERRORS,
)
def start_study(request: Request, name: StudyName) -> dict:
    """Launch the study's sweep in the background (409 if it is already running)."""
    handle = actions.start(_state(request), name)
    return {"name": name, "status": "running", "process": handle.as_dict()}


@router.post(
    "/{name}/stop",
    response_model=Action,
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(require_write)],
    responses=ERRORS,
)
def stop_study(request: Request, name: StudyName) -> dict:
    """Ask the study's sweep to stop cleanly (SIGINT); completed trials are kept. 409 if not running."""
    handle = actions.stop(_state(request), name)
    return {"name": name, "status": "stopping", "process": handle.as_dict()}
