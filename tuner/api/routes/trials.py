"""Trials of a study: pages (filter by state, sort by objective), one trial and its run config, the
best one, and the best trial's checkpoint as a download."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, status
from fastapi.responses import Response, StreamingResponse
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from tuner.analysis.front import best_record, choose, front, study_goals
from tuner.analysis.lineage import population_spec
from tuner.analysis.reads import SORT_KEYS, StudySnapshot, TrialRecord
from tuner.api import checkpoint, serializers
from tuner.api.auth import require_read
from tuner.api.errors import NotFound
from tuner.api.models import TrialDetail, TrialPage, TrialState
from tuner.api.routes.common import STUDY, StudyName, attachment, errors, readable_row, snapshot_of, state_of
from tuner.api.routes.population import LineageStep, replay_fields
from tuner.objectives.goals import Goals
from tuner.storage import study_attrs, trial_attrs
from tuner.storage.object_store import is_uri

router = APIRouter(prefix=STUDY, tags=["trials"], dependencies=[Depends(require_read)])
ERRORS = errors(401, 404, 409, 422, 503)
CHOSEN_ERRORS = errors(401, 404, 409, 422, 503)  # a trial named that is not COMPLETE: 409
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
    """The trial's run config.yaml (in the object store of a study kept there), else the params its
    model was trained with (a population member's in force at its end)."""
    state = state_of(request)
    settings = state.settings
    stored = study_attrs.STORAGE_PATH.of(readable_row(state, name).user_attrs)
    found = checkpoint.object_config(trial.user_attrs, settings.object_root, stored)
    roots = (settings.storage_root,)
    return found or checkpoint.run_config(
        trial.user_attrs, roots, settings.storage_root / name, trial.params_in_force
    )


@router.get("/trials/{number}/config", response_model=dict[str, Any], responses=ERRORS)
def get_trial_config(request: Request, name: StudyName, number: TrialNumber) -> dict:
    """The trial's resolved run config (its `config.yaml`), else its sampled hyperparameters."""
    state = state_of(request)
    trial = _trial(state.store.snapshot(readable_row(state, name)), name, number)
    return serializers.clean(_config(request, name, trial))


ChosenTrial = Annotated[
    int | None,
    Query(ge=0, le=2**31 - 1, description="A COMPLETE trial by number instead of the best."),
]
Rule = Annotated[
    str | None,
    Query(
        max_length=200,
        description='Pick from the Pareto front (docs/api.md, "Several objectives"): `lowest:NAME` or '
        "`highest:NAME`, optionally `@NAME<=BOUND`, e.g. `lowest:val_loss@num_params<=24e6`.",
    ),
]


def _best(
    snapshot: StudySnapshot,
    name: str,
    trial: int | None = None,
    rule: str | None = None,
    goals: Goals | None = None,
) -> TrialRecord:
    """The study's best COMPLETE trial (lowest validation loss; feasible, under constraints), or the trial `trial` names
    (COMPLETE, else 409), or the front's member `rule` picks (422 for a rule it cannot read, 404
    when no member qualifies)."""
    if trial is not None and rule is not None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "give trial or rule, not both")
    if trial is not None:
        found = _trial(snapshot, name, trial)
        if not found.completed:
            raise HTTPException(status.HTTP_409_CONFLICT, f"trial {trial} is {found.state}, not COMPLETE")
        return found
    if rule is not None:
        try:
            chosen = choose(front(snapshot.trials, goals or Goals()), rule, goals or Goals())
        except ValueError as err:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"rule: {err}") from None
        if chosen is None:
            raise NotFound(f"no trial on study {name!r}'s front satisfies {rule!r}")
        return snapshot.by_number[chosen.number]
    best = best_record(snapshot.trials, goals or Goals(), snapshot.best)
    if best is None:
        raise NotFound(
            f"study {name!r} has no completed trial yet"
            + (" within its constraints" if snapshot.best else "")
        )
    return best


class BestTrial(TrialDetail):
    """The chosen trial; in a population study (scheduler pbt/pb2) also its lineage and replay."""

    schedule: list[LineageStep] | None = Field(
        None, description="Population study only: the settings its weights were trained with, by step."
    )
    replay_config: dict[str, Any] | None = Field(
        None,
        description="Population study only: the trainer config replaying `schedule` (`rnntune train "
        "--config`); null when its run config is gone.",
    )


@router.get("/best", response_model=BestTrial, response_model_exclude_unset=True, responses=CHOSEN_ERRORS)
async def get_best(request: Request, name: StudyName, trial: ChosenTrial = None, rule: Rule = None) -> dict:
    """The completed trial with the best objective (or the one `trial` or `rule` picks); in a
    population study with its `schedule` and `replay_config` (docs/api.md)."""
    attrs = readable_row(state_of(request), name).user_attrs
    snapshot = await snapshot_of(request, name)
    best = _best(snapshot, name, trial, rule, study_goals(attrs))
    detail = serializers.trial_detail(best)
    if population_spec(attrs) is None:
        return detail
    return {**detail, **await run_in_threadpool(replay_fields, request, name, snapshot, best)}


@router.get(
    "/best/checkpoint",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {}}}, **CHOSEN_ERRORS},
)
def get_best_checkpoint(
    request: Request, name: StudyName, trial: ChosenTrial = None, rule: Rule = None
) -> StreamingResponse:
    """The best trial's checkpoint file (load it with `trainer.load_checkpoint`), or that of the
    trial `trial` or `rule` picks, as `GET .../best`.

    Headers: `X-Checkpoint-SHA256` (and `Repr-Digest`), `X-Trial-Number`, `X-Trial-Value`,
    `X-Trial-Config-URL` (the run's resolved config) and, when that config is under 8 kB,
    `X-Trial-Config` (the config itself as JSON). Only files inside the server's storage root
    (`--storage`) are ever served, from the file descriptor that was checked (no symlink followed);
    from an object store (`--storage s3://...`), only keys under the study's prefix inside it.
    """
    state = state_of(request)
    row = readable_row(state, name)
    best = _best(state.store.snapshot(row), name, trial, rule, study_goals(row.user_attrs))
    settings, raw = state.settings, trial_attrs.CHECKPOINT.of(best.user_attrs)
    if isinstance(raw, str) and is_uri(raw):
        stored = study_attrs.STORAGE_PATH.of(row.user_attrs)
        found = checkpoint.locate_object(raw, settings.object_root, stored)
    else:
        found = checkpoint.locate(raw, (settings.storage_root,), settings.storage_root / name)
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
