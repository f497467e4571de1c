"""A study's trials as one table to download: `trials.csv` and `trials.parquet` (see `tuner.analysis.export`)."""

from __future__ import annotations

from typing import Annotated, Literal

import optuna
from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response

from tuner.analysis.export import MEDIA_TYPES, encode, trials_frame
from tuner.api.auth import require_read
from tuner.api.routes.common import STUDY, StudyName, errors, memoised, snapshot_of, state_of

router = APIRouter(prefix=STUDY, tags=["trials"], dependencies=[Depends(require_read)])
ERRORS = errors(401, 404, 422)


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
    Built once per version of the study and kept with its snapshot: repeated downloads of an
    unchanged study read no trial rows."""
    store = state_of(request).store
    snapshot = await snapshot_of(request, name)

    def build() -> tuple[bytes, int]:
        frame = trials_frame(optuna.load_study(study_name=name, storage=store.storage))
        return encode(frame, fmt), len(frame)

    body, count = await memoised(snapshot, ("export", fmt), build)
    return Response(
        body,
        media_type=MEDIA_TYPES[fmt],
        headers={
            "Content-Disposition": f'attachment; filename="{name}-trials.{fmt}"',
            "X-Trial-Count": str(count),
        },
    )
