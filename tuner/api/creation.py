"""POST /studies: validated request → `tuner.study.create_study`, errors mapped to 409/422."""

from __future__ import annotations

from fastapi import HTTPException

from tuner.api.errors import Conflict
from tuner.api.models import CreateStudy
from tuner.api.state import ApiState


def create(state: ApiState, body: CreateStudy) -> None:
    """Create the study in the API's database with its checkpoints under `<storage>/<name>`.

    A name already taken is a 409; a space, sampler option, scheduler or override that the study
    module rejects is a 422 carrying its message (which names the field and the allowed values).
    """
    from optuna.exceptions import DuplicatedStudyError

    from tuner.study import create_study

    if state.store.db.study_row(body.name) is not None:
        raise Conflict(f"a study named {body.name!r} already exists")
    kwargs = {
        "storage_url": state.settings.db_url,
        "space": body.space,
        "sampler": body.sampler,
        "n_trials": body.n_trials,
        "parallel": body.parallel,
        "storage_path": str(state.settings.storage_root / body.name),
        "overrides": dict(body.overrides),
    }
    if body.scheduler is not None:
        kwargs["scheduler"] = body.scheduler
    try:
        create_study(body.name, **kwargs)
    except DuplicatedStudyError as err:
        raise Conflict(f"a study named {body.name!r} already exists") from err
    except (ValueError, KeyError, TypeError, LookupError) as err:
        raise HTTPException(status_code=422, detail=str(err).strip("'\"")) from err
