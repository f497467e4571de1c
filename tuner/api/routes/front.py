"""The study's Pareto front over its objectives (docs/api.md, "Several objectives"), and the
front's member a rule picks (`?rule=lowest:val_loss@num_params<=24e6`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status

from tuner.analysis.front import choose, front, members, study_goals
from tuner.api.auth import require_read
from tuner.api.models import ParetoFront
from tuner.api.routes.common import STUDY, StudyName, errors, readable_row, snapshot_of, state_of

router = APIRouter(prefix=STUDY, tags=["analysis"], dependencies=[Depends(require_read)])
Rule = Annotated[
    str | None,
    Query(
        max_length=200,
        description="Pick one trial of the front: `lowest:NAME` or `highest:NAME`, optionally "
        "`@NAME<=BOUND` (e.g. `lowest:val_loss@num_params<=24e6`).",
    ),
]


@router.get("/pareto", response_model=ParetoFront, responses=errors(401, 404, 409, 422, 503))
async def get_pareto(request: Request, name: StudyName, rule: Rule = None) -> dict:
    """The non-dominated feasible COMPLETE trials over the study's objectives, every other COMPLETE
    trial marked feasible or not, and (with `rule`) the one the rule picks."""
    goals = study_goals(readable_row(state_of(request), name).user_attrs)
    snapshot = await snapshot_of(request, name)
    points = front(snapshot.trials, goals)
    try:
        chosen = choose(points, rule, goals) if rule else None
    except ValueError as err:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"rule: {err}") from None
    return {
        "objectives": [{"name": o.name, "direction": o.direction} for o in goals.objectives],
        "constraints": [str(c) for c in goals.constraints],
        "front": [p.number for p in members(points, goals)],
        "trials": [p.as_dict() for p in points],
        "chosen": chosen.number if chosen is not None else None,
    }
