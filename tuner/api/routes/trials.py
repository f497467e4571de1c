"""Trials of a study: pages (filter by state, sort by objective), one trial and its run config, the
best one, and the best trial's checkpoint as a download."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response, StreamingResponse

from tuner.analysis.reads import SORT_KEYS, StudySnapshot, TrialRecord
from tuner.api import checkpoint, serializers
from tuner.api.auth import require_read
from tuner.api.errors import NotFound
from tuner.api.models import TrialDetail, TrialPage, TrialState
from tuner.api.routes.common import STUDY, StudyName, attachment, errors, snapshot_of, state_of
from tuner.storage import trial_attrs

router = APIRouter(prefix=STUDY, tags=["trials"], dependencies=[Depends(require_read)])
ERRORS = errors(401, 404, 422, 503)
TrialNumber = Annotated[int, Path(ge=0, le=2**62, description="The trial's number in its study.")]
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
        snapshot.summary_json(t, lambda t: json.dumps(serializers.trial_summary(t)))
        for t in chosen[offset : offset + limit]
    )
    head = json.dumps({"total": len(chosen), "offset": offset, "limit": limit})[:-1]
    return Response(f'{head}, "items": [{items}]}}', media_type="application/json")


@router.get("/trials/{number}", response_model=TrialDetail, responses=ERRORS)
async def get_trial(request: Request, name: StudyName, number: TrialNumber) -> dict:
    """One trial with its distributions, learning curve (step → objective) and all user attrs."""
    return serializers.trial_detail(_trial(await snapshot_of(request, name), name, number))


def _trial(snapshot: StudySnapshot, name: str, number: int) -> TrialRecord:
    trial = snapshot.by_number.get(number)
    if trial is None:
        raise NotFound(f"study {name!r} has no trial number {number}")
    return trial


def _config(request: Request, name: str, trial: TrialRecord) -> dict:
    settings = state_of(request).settings
    roots = (settings.storage_root,)
    return checkpoint.run_config(trial.user_attrs, roots, settings.storage_root / name, trial.params)


@router.get("/trials/{number}/config", response_model=dict[str, Any], responses=ERRORS)
def get_trial_config(request: Request, name: StudyName, number: TrialNumber) -> dict:
    """The trial's resolved run config (its `config.yaml`), else its sampled hyperparameters."""
    state = state_of(request)
    trial = _trial(state.store.snapshot(state.store.row(name)), name, number)
    return serializers.clean(_config(request, name, trial))


def _best(snapshot: StudySnapshot, name: str) -> TrialRecord:
    best = snapshot.best
    if best is None:
        raise NotFound(f"study {name!r} has no completed trial yet")
    return best


@router.get("/best", response_model=TrialDetail, responses=ERRORS)
async def get_best(request: Request, name: StudyName) -> dict:
    """The completed trial with the best objective."""
    return serializers.trial_detail(_best(await snapshot_of(request, name), name))


@router.get(
    "/best/checkpoint",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {}}}, **ERRORS},
)
def get_best_checkpoint(request: Request, name: StudyName) -> StreamingResponse:
    """The best trial's checkpoint file (load it with `trainer.load_checkpoint`).

    Headers: `X-Checkpoint-SHA256` (and `Repr-Digest`), `X-Trial-Number`, `X-Trial-Value`,
    `X-Trial-Config-URL` (the run's resolved config) and, when that config is under 8 kB,
    `X-Trial-Config` (the config itself as JSON). Only files inside the server's storage root
    (`--storage`) are ever served, from the file descriptor that was checked (no symlink followed).
    """
    state = state_of(request)
    best = _best(state.store.snapshot(state.store.row(name)), name)
    settings = state.settings
    found = checkpoint.locate(
        trial_attrs.CHECKPOINT.of(best.user_attrs), (settings.storage_root,), settings.storage_root / name
    )
    config_url = quote(request.url_for("get_trial_config", name=name, number=best.number).path, safe="/%")
    assert best.value is not None  # `best` is a completed trial with a finite objective
    try:
        headers = checkpoint.headers(found, best.number, best.value, _config(request, name, best), config_url)
    except BaseException:
        found.handle.close()
        raise
    headers["Content-Disposition"] = attachment(f"{name}-trial{best.number}-{found.path.name}")
    headers["Content-Length"] = str(found.size)
    return StreamingResponse(found.chunks(), media_type="application/octet-stream", headers=headers)
