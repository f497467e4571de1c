"""A study's trials as one table to download: `trials.csv` and `trials.parquet` (see `tuner.analysis.export`)."""

from __future__ import annotations

from typing import Annotated, Literal

import optuna
from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response

from tuner.analysis.export import MEDIA_TYPES, encode, trials_frame
from tuner.api.auth import require_read
from tuner.api.errors import NotFound
from tuner.api.routes.common import STUDY, StudyName, errors, state_of

router = APIRouter(prefix=STUDY, tags=["trials"], dependencies=[Depends(require_read)])
ERRORS = errors(401, 404, 422)


@router.get(
    "/trials.{fmt}",
    response_class=Response,
    responses={200: {"content": {t: {} for t in MEDIA_TYPES.values()}}, **ERRORS},
)
def export_trials(
    request: Request,
    name: StudyName,
    fmt: Annotated[Literal["csv", "parquet"], Path(description="Table format.")],
) -> Response:
    """Every trial as one row (params, state, value, step reached, wall time, retry links, user attrs)."""
    try:
        study = optuna.load_study(study_name=name, storage=state_of(request).store.storage)
    except KeyError:
        raise NotFound(f"no study named {name!r}") from None
    frame = trials_frame(study)
    return Response(
        encode(frame, fmt),
        media_type=MEDIA_TYPES[fmt],
        headers={
            "Content-Disposition": f'attachment; filename="{name}-trials.{fmt}"',
            "X-Trial-Count": str(len(frame)),
        },
    )
