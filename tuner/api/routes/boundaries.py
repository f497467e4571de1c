"""Range-boundary alerts (`tuner.space.boundaries`): the best trials crowd an edge of a searched range."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from tuner.api.auth import require_read
from tuner.api.routes.common import STUDY, StudyName, errors, memoised, readable_row, snapshot_of, state_of
from tuner.space.boundaries import MIN_SHARE, MIN_TOP, NEAR, TOP_FRACTION, crowded_edges
from tuner.storage import study_attrs

router = APIRouter(prefix=STUDY, tags=["analysis"], dependencies=[Depends(require_read)])
ERRORS = errors(401, 404, 409, 422)


@router.get("/boundaries", responses=ERRORS)
async def get_boundaries(request: Request, name: StudyName) -> dict[str, Any]:
    """Parameters whose best trials crowd one edge of their range, with the rule that found them.

    Search beyond such an edge: `POST /studies/{name}/widen` (or `rnntune sweep --resume NAME
    --widen PARAM`), then start the study again.
    """
    snapshot = await snapshot_of(request, name)
    row = await run_in_threadpool(readable_row, state_of(request), name)
    space = (study_attrs.SPACE_DEF.of(row.user_attrs) or {}).get("params", {})
    complete = snapshot.complete_points()

    def compute() -> dict[str, Any]:
        alerts = crowded_edges(space, complete)
        return {
            "alerts": [a.to_dict() for a in alerts],
            "n_complete": len(complete),
            "rule": {"top_fraction": TOP_FRACTION, "min_top": MIN_TOP, "near": NEAR, "min_share": MIN_SHARE},
        }

    # A widened range changes the alerts but not the trials the snapshot is keyed on.
    return await memoised(
        snapshot, ("boundaries", len(study_attrs.WIDENED.of(row.user_attrs) or [])), compute
    )
