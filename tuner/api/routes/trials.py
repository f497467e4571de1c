"""Trials of a study: pages (filter by state, sort by objective), one trial, the best one, and the
best trial's checkpoint as a download."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import FileResponse, Response

from tuner.api import checkpoint, views
from tuner.api.auth import require_read
from tuner.api.errors import NotFound
from tuner.api.models import ErrorBody, TrialDetail, TrialPage, TrialState
from tuner.api.snapshot import SORT_KEYS, StudySnapshot
from tuner.api.records import TrialRecord
from tuner.api.routes.common import snapshot_of, state_of

router = APIRouter(prefix="/studies/{name}", tags=["trials"], dependencies=[Depends(require_read)])
StudyName = Annotated[str, Path(max_length=512, description="The study's name.")]
ERRORS = {code: {"model": ErrorBody} for code in (401, 404, 422, 503)}
SortKey = Literal[SORT_KEYS]  # type: ignore[valid-type]


@router.get("/trials", response_model=TrialPage, responses=ERRORS)
async def list_trials(
    request: Request,
    name: StudyName,
    state: Annotated[TrialState | None, Query(description="Only trials in this state.")] = None,
    sort: Annotated[
        SortKey, Query(description="`objective`: best first; `-objective`: worst first.")
    ] = "number",
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> Response:
    """A page of the study's trials: params, objective, timing, node and error of each."""
    snapshot = await snapshot_of(request, name)
    chosen = snapshot.ordered(state, sort)
    items = ",".join(
        snapshot.summary_json(t, lambda t: json.dumps(views.trial_summary(t)))
        for t in chosen[offset : offset + limit]
    )
    head = json.dumps({"total": len(chosen), "offset": offset, "limit": limit})[:-1]
    return Response(f'{head}, "items": [{items}]}}', media_type="application/json")


@router.get("/trials/{number}", response_model=TrialDetail, responses=ERRORS)
async def get_trial(
    request: Request, name: StudyName, number: Annotated[int, Path(ge=0, le=2**62)]
) -> dict:
    """One trial with its distributions, learning curve (step → objective) and all user attrs."""
    snapshot = await snapshot_of(request, name)
    trial = snapshot.by_number.get(number)
    if trial is None:
        raise NotFound(f"study {name!r} has no trial number {number}")
    return views.trial_detail(trial)


def _best(snapshot: StudySnapshot, name: str) -> TrialRecord:
    best = snapshot.best
    if best is None:
        raise NotFound(f"study {name!r} has no completed trial yet")
    return best


@router.get("/best", response_model=TrialDetail, responses=ERRORS)
async def get_best(request: Request, name: StudyName) -> dict:
    """The completed trial with the best objective."""
    return views.trial_detail(_best(await snapshot_of(request, name), name))


@router.get(
    "/best/checkpoint",
    response_class=FileResponse,
    responses={200: {"content": {"application/octet-stream": {}}}, **ERRORS},
)
def get_best_checkpoint(request: Request, name: StudyName) -> FileResponse:
    """The best trial's checkpoint file (load it with `trainer.load_checkpoint`).

    Headers: `X-Checkpoint-SHA256` (and `Repr-Digest`), `X-Trial-Number`, `X-Trial-Value` and
    `X-Trial-Config` (the run's resolved config as JSON). Only files inside the study's storage
    root are ever served.
    """
    state = state_of(request)
    row = state.store.row(name)
    best = _best(state.store.snapshot(row), name)
    root = checkpoint.storage_root(row.user_attrs, state.settings.storage_root / name)
    found = checkpoint.locate(best.user_attrs.get("checkpoint"), root, best.params)
    return FileResponse(
        found.path,
        media_type="application/octet-stream",
        filename=f"{name}-trial{best.number}-{found.path.name}",
        headers=checkpoint.headers(found, best.number, best.value),
    )
