"""POST /studies: validated request → `tuner.study.create_study`, errors mapped to 409/422.

A space is given by name (only the spaces `rnntune spaces` lists: a request never names a file on
the server) or inline as a dict; `create_study` validates it, with the overrides, once.
"""

from __future__ import annotations

from fastapi import HTTPException

from tuner.api.errors import Conflict
from tuner.api.models import CreateStudy
from tuner.api.state import ApiState
from tuner.space import list_spaces
from tuner.study import StudyExistsError, create_study


def _space(raw: str | dict) -> str | dict:
    """The space as given, once a name is known to be one of the listed spaces."""
    if isinstance(raw, dict):
        return raw
    known = list_spaces()
    if raw not in known:
        raise HTTPException(
            status_code=422,
            detail=f"body.space: unknown search space {raw!r}; known: {', '.join(known) or 'none'}",
        )
    return raw


def create(state: ApiState, body: CreateStudy) -> None:
    """Create the study in the API's database with its checkpoints under `<storage>/<name>`.

    A name already taken is a 409; a space, range override or setting that the space module
    rejects is a 422 carrying its message (which names the field and the allowed values).
    """
    if state.store.db.study_row(body.name) is not None:
        raise Conflict(f"a study named {body.name!r} already exists")
    space = _space(body.space)
    overrides = body.overrides.model_dump()
    try:
        create_study(
            body.name,
            storage_url=state.settings.db_url,
            space=space,
            sampler=body.sampler,
            n_trials=body.n_trials,
            parallel=body.parallel,
            scheduler=body.scheduler,
            storage_path=str(state.settings.storage_root / body.name),
            overrides=overrides if overrides["ranges"] or overrides["set"] else None,
            seed=body.seed,
            early_stopping={"grace_steps": body.grace_steps, "reduction_factor": body.reduction_factor},
        )
    except StudyExistsError as err:
        raise Conflict(str(err)) from err
    except (ValueError, TypeError, KeyError) as err:
        raise HTTPException(status_code=422, detail=f"body: {err}") from err
    finally:
        state.store.invalidate(body.name)
