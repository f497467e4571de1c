"""A study's trials as one table to download: `trials.csv` and `trials.parquet` (see `tuner.analysis.export`)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response, StreamingResponse

from tuner.analysis.export import MEDIA_TYPES, chunks, encode, trials_frame
from tuner.analysis.front import study_goals
from tuner.api.auth import require_read
from tuner.api.routes.common import (
    STUDY,
    StudyName,
    attachment,
    errors,
    memoised,
    readable_row,
    snapshot_of,
    state_of,
)

router = APIRouter(prefix=STUDY, tags=["trials"], dependencies=[Depends(require_read)])
ERRORS = errors(401, 404, 409, 422)


@router.get(
    "/trials.{fmt}",
    response_class=Response,
    responses={200: {"content": {t: {} for t in MEDIA_TYPES.values()}}, **ERRORS},
)
async def export_trials(
    request: Request,
    name: StudyName,
    fmt: Annotated[Literal["csv", "parquet"], Path(description="Table format.")],
) -> Response:
    """Every trial as one row (params, state, value, step reached, wall time, retry links, user attrs).
    Built from the study's snapshot once per version of the study and kept with it (repeated
    downloads of an unchanged study read no trial rows), and sent in 1 MiB pieces."""
    snapshot = await snapshot_of(request, name)
    goals = study_goals(readable_row(state_of(request), name).user_attrs)

    def build() -> tuple[bytes, int]:
        frame = trials_frame(snapshot.trials, goals)
        return encode(frame, fmt), len(frame)

    body, count = await memoised(snapshot, ("export", fmt), build)
    return StreamingResponse(
        chunks(body),
        media_type=MEDIA_TYPES[fmt],
        headers={
            "Content-Disposition": attachment(f"{name}-trials.{fmt}"),
            "Content-Length": str(len(body)),
            "X-Trial-Count": str(count),
        },
    )
