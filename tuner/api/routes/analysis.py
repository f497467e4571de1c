"""Sensitivity around the best trial (thesis Appendix 2.B) as data and as a parallel-coordinates plot."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response

from tuner.api import plots, sensitivity
from tuner.api.auth import require_read
from tuner.api.errors import NotFound
from tuner.api.models import ParallelCoordinates, Sensitivity
from tuner.api.reads import StudySnapshot
from tuner.api.routes.common import STUDY, StudyName, errors, memoised, snapshot_of

router = APIRouter(prefix=STUDY, tags=["analysis"], dependencies=[Depends(require_read)])
Fraction = Annotated[
    float,
    Query(
        gt=0.0,
        le=1.0,
        description="Neighbourhood half-width per hyperparameter, as a fraction of its range "
        "(log scale for log-scale ones).",
    ),
]
ERRORS = errors(401, 404, 422, 429, 503)


async def _completed(request: Request, name: str) -> StudySnapshot:
    snapshot = await snapshot_of(request, name)
    if snapshot.best is None:
        raise NotFound(f"study {name!r} has no completed trial yet")
    return snapshot


async def _analysis(snapshot: StudySnapshot, fraction: float) -> str:
    """The analysis as JSON, validated against the `Sensitivity` model once per study version."""

    def build() -> str:
        completed = [t for t in snapshot.ordered("COMPLETE", "objective") if t.completed]
        result = sensitivity.analyse(completed, snapshot.direction, fraction)
        return Sensitivity.model_validate(result).model_dump_json()

    return await memoised(snapshot, ("sensitivity", fraction), build)


async def _plot(snapshot: StudySnapshot, fraction: float) -> dict:
    def build() -> dict:
        completed = [t for t in snapshot.ordered("COMPLETE", "objective") if t.completed]
        near = {completed[0].number} | {
            t.number for t in sensitivity.neighbourhood(completed[0], completed, fraction)
        }
        plot = plots.parallel_coordinates(completed, near)
        plot["json"] = (
            '{"figure":' + plot["figure"] + ',"trial_numbers":' + json.dumps(plot["trial_numbers"])
            + ',"neighbourhood":' + json.dumps(plot["neighbourhood"]) + "}"
        )
        return plot

    return await memoised(snapshot, ("plot", fraction), build)


@router.get("/sensitivity", response_model=Sensitivity, responses=ERRORS)
async def get_sensitivity(
    request: Request, name: StudyName, fraction: Fraction = sensitivity.DEFAULT_FRACTION
) -> Response:
    """The best trial, its neighbourhood (trials with every hyperparameter within `fraction` of its
    range from the best value) with each neighbour's objective distance from the best, and
    PED-ANOVA importances of the hyperparameters."""
    return Response(await _analysis(await _completed(request, name), fraction), media_type="application/json")


@router.get(
    "/plots/parallel-coordinates",
    response_model=ParallelCoordinates,
    responses={200: {"content": {"text/html": {}}}, **ERRORS},
)
async def get_parallel_coordinates(
    request: Request,
    name: StudyName,
    fraction: Fraction = sensitivity.DEFAULT_FRACTION,
    format: Annotated[Literal["json", "html"], Query(description="Plotly JSON or an HTML page.")] = "json",
) -> Response:
    """Parallel coordinates of completed trials: log axes for log-scale hyperparameters, lines
    coloured by objective, the best trial's neighbourhood in red (thesis Figures 2.5–2.6)."""
    plot = await _plot(await _completed(request, name), fraction)
    if format == "html":
        return HTMLResponse(plots.html_page(plot, name, "/static/vendor/plotly.min.js"))
    return Response(plot["json"], media_type="application/json")
