"""Sensitivity around the best trial (thesis Appendix 2.B) as data and as a parallel-coordinates plot,
and hyperparameter importances with bootstrap confidence intervals."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response

from tuner.analysis import importances, plots, sensitivity
from tuner.analysis.front import on_measure, study_goals
from tuner.analysis.reads import StudySnapshot, TrialRecord
from tuner.api.auth import require_read
from tuner.api.errors import NotFound
from tuner.api.models import Importances, ParallelCoordinates, Sensitivity
from tuner.api.routes.common import STUDY, StudyName, errors, memoised, readable_row, snapshot_of, state_of
from tuner.objectives.goals import Goals
from tuner.objectives.measures import PRIMARY, measure

router = APIRouter(prefix=STUDY, tags=["analysis"], dependencies=[Depends(require_read)])
# Fractions are rounded to this step (fine enough for the default 0.075), so the distinct analyses
# of a study version are finite (at most 200 per `include`) and each is computed once while it stays among the recently used.
FRACTION_STEP = 0.005
Fraction = Annotated[
    float,
    Query(
        ge=FRACTION_STEP,
        le=1.0,
        description="Neighbourhood half-width per hyperparameter, as a fraction of its range "
        "(log scale for log-scale ones), either side of the best value; rounded to the nearest "
        "0.005 (the answer's `fraction`). The default 0.075 is the thesis' window (Appendix 2.B: "
        "about 15% of each range in all).",
    ),
]
IncludeParam = Annotated[
    sensitivity.Include,
    Query(
        description="`all`: COMPLETE trials and PRUNED ones at the step where they were stopped; "
        "`complete`: COMPLETE trials only."
    ),
]
ObjectiveParam = Annotated[
    str,
    Query(
        pattern="^(val_loss|num_params|tokens_per_s|peak_memory|wall_time)$",
        description="The measure the analysis is of (a study with several objectives: one of them; "
        "default the validation loss). Another than val_loss leaves PRUNED trials out.",
    ),
]
ERRORS = errors(401, 404, 409, 422, 503)


def _basis(
    snapshot: StudySnapshot, include: str, objective: str, goals: Goals
) -> tuple[list[TrialRecord], list[TrialRecord], str]:
    """The COMPLETE (best first) and PRUNED trials an analysis reads, and its direction: the
    study's own for the validation loss, else the measure's direction in the study (or its better one)."""
    completed, pruned = snapshot.analysed(include)
    if objective == PRIMARY:
        return completed, pruned, snapshot.direction
    direction = next(
        (o.direction for o in goals.objectives if o.name == objective), measure(objective).better
    )
    found = on_measure(completed, objective, direction)
    if not found:
        raise NotFound(f"no completed trial of this study measured {objective}")
    return found, [], direction


def quantised(fraction: float) -> float:
    """`fraction` rounded to `FRACTION_STEP`."""
    return round(round(fraction / FRACTION_STEP) * FRACTION_STEP, 3)


def _goals(request: Request, name: str, objective: str) -> Goals:
    """The study's goals, read only when the analysis is of another measure than the loss."""
    return Goals() if objective == PRIMARY else study_goals(readable_row(state_of(request), name).user_attrs)


async def _completed(request: Request, name: str) -> StudySnapshot:
    snapshot = await snapshot_of(request, name)
    if snapshot.best is None:
        raise NotFound(f"study {name!r} has no completed trial yet")
    return snapshot


async def _analysis(
    snapshot: StudySnapshot, fraction: float, include: str, objective: str, goals: Goals
) -> str:
    """The analysis as JSON, validated against the `Sensitivity` model once per study version."""

    def build() -> str:
        completed, pruned, direction = _basis(snapshot, include, objective, goals)
        result = sensitivity.analyse(completed, pruned, direction, fraction, include)  # type: ignore[arg-type]
        return Sensitivity.model_validate(result).model_dump_json()

    return await memoised(snapshot, ("sensitivity", fraction, include, objective), build)


async def _importances(snapshot: StudySnapshot, include: str, objective: str, goals: Goals) -> str:
    """Importances with bootstrap intervals as JSON, once per study version (the bootstrap is the
    costly part: 100 PED-ANOVA runs on at most 100 trials each)."""

    def build() -> str:
        completed, pruned, direction = _basis(snapshot, include, objective, goals)
        fidelity = importances.choose_fidelity(completed, pruned)
        result = importances.with_intervals(fidelity, direction)
        return Importances.model_validate({**result, "include": include}).model_dump_json()

    return await memoised(snapshot, ("importances", include, objective), build)


async def _plot(snapshot: StudySnapshot, fraction: float, include: str, objective: str, goals: Goals) -> dict:
    def build() -> dict:
        completed, pruned, _ = _basis(snapshot, include, objective, goals)
        drawn = sensitivity.points(completed, pruned, include)  # type: ignore[arg-type]
        near = {completed[0].number} | {
            p.number for p in sensitivity.neighbourhood(completed[0], drawn, fraction)
        }
        plot = plots.parallel_coordinates(drawn, near, "objective" if objective == PRIMARY else objective)
        plot["json"] = (
            '{"figure":'
            + plot["figure"]
            + ","
            + json.dumps({k: plot[k] for k in ("trial_numbers", "states", "steps", "neighbourhood")})[1:]
        )
        return plot

    return await memoised(snapshot, ("plot", fraction, include, objective), build)


@router.get("/sensitivity", response_model=Sensitivity, responses=ERRORS)
async def get_sensitivity(
    request: Request,
    name: StudyName,
    fraction: Fraction = sensitivity.DEFAULT_FRACTION,
    include: IncludeParam = "all",
    objective: ObjectiveParam = PRIMARY,
) -> Response:
    """The best COMPLETE trial, its neighbourhood (trials with every hyperparameter within
    `fraction` of its range from the best value; PRUNED ones at the step where they were stopped
    unless `include=complete`) with each neighbour's distance from the best at the same fidelity,
    and PED-ANOVA importances with the fidelity and trial count they rest on."""
    snapshot = await _completed(request, name)
    body = await _analysis(
        snapshot, quantised(fraction), include, objective, _goals(request, name, objective)
    )
    return Response(body, media_type="application/json")


@router.get("/importances", response_model=Importances, responses=ERRORS)
async def get_importances(
    request: Request, name: StudyName, include: IncludeParam = "all", objective: ObjectiveParam = PRIMARY
) -> Response:
    """PED-ANOVA importances with bootstrap confidence intervals (fixed resamples and seed), the
    fidelity they were computed at (the COMPLETE objective, or one eval step that every included
    trial reached) and how many trials they rest on."""
    snapshot = await _completed(request, name)
    body = await _importances(snapshot, include, objective, _goals(request, name, objective))
    return Response(body, media_type="application/json")


@router.get(
    "/plots/parallel-coordinates",
    response_model=ParallelCoordinates,
    responses={200: {"content": {"text/html": {}}}, **ERRORS},
)
async def get_parallel_coordinates(
    request: Request,
    name: StudyName,
    fraction: Fraction = sensitivity.DEFAULT_FRACTION,
    include: IncludeParam = "all",
    format: Annotated[Literal["json", "html"], Query(description="Plotly JSON or an HTML page.")] = "json",
    objective: ObjectiveParam = PRIMARY,
) -> Response:
    """Parallel coordinates: log axes for log-scale hyperparameters, completed trials coloured by
    objective, pruned ones grey at the value where they were stopped (unless `include=complete`),
    the best trial's neighbourhood in red (thesis Figures 2.5–2.6)."""
    snapshot = await _completed(request, name)
    plot = await _plot(snapshot, quantised(fraction), include, objective, _goals(request, name, objective))
    if format == "html":
        return HTMLResponse(plots.html_page(plot, name, "/static/vendor/plotly.min.js"))
    return Response(plot["json"], media_type="application/json")
