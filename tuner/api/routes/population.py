"""A population-based-training study (scheduler pbt/pb2) as a population: its members' curves and
histories, and the best member's lineage with the trainer config that replays it (docs/api.md,
"Population-based training")."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from tuner.analysis import lineage
from tuner.analysis.front import best_record, study_goals
from tuner.analysis.reads import StudySnapshot, TrialRecord
from tuner.api import checkpoint, serializers
from tuner.api.auth import require_read
from tuner.api.errors import Conflict
from tuner.api.routes.common import STUDY, StudyName, errors, readable_row, state_of
from tuner.storage import study_attrs

router = APIRouter(prefix=STUDY, tags=["analysis"], dependencies=[Depends(require_read)])


class LineageStep(BaseModel):
    """From `step` on, the weights were trained with `settings`, by member `trial`."""

    step: int
    settings: dict[str, float]
    trial: int


class PopulationSegment(BaseModel):
    """From `step` on the member trained with `settings`, after copying trial `from_trial`'s
    checkpoint of that step (validation loss `from_value`) when `from_trial` is set."""

    step: int
    from_trial: int | None
    from_value: float | None
    settings: dict[str, float]
    params: dict[str, Any] | None = Field(
        None, description="On a copy: every tuned hyperparameter from then on, the shape copied included."
    )


class PopulationMember(BaseModel):
    number: int
    state: str
    value: float | None
    curve: list[tuple[int, float | None]] = Field(description="[step, validation loss] pairs.")
    history: list[PopulationSegment]
    retry_of: int | None = Field(description="The failed trial this one retries, if any.")
    params: dict[str, Any] = Field(
        description="The hyperparameters in force at its end (after its copies, shape included)."
    )
    initial_params: dict[str, Any] = Field(description="Optuna's params: those first sampled for it.")


class PopulationBest(BaseModel):
    number: int
    value: float | None
    lineage: list[LineageStep] = Field(description="The settings its weights were trained with.")
    config: dict[str, Any] | None = Field(
        description="The trainer config that replays the lineage (`rnntune train --config`); null "
        "when the member's run config is gone."
    )


class Population(BaseModel):
    """GET /studies/{name}/population: the members and the best member's replay."""

    scheduler: str
    perturbation_interval: int | None = Field(
        description="Steps between perturbations; null: the default (about max_steps/8)."
    )
    members: list[PopulationMember]
    best: PopulationBest | None = Field(description="The best COMPLETE member; null before one.")


@router.get("/population", response_model=Population, responses=errors(401, 404, 409, 422, 503))
def get_population(request: Request, name: StudyName) -> dict:
    """The members of a pbt/pb2 study (409 for any other, or for a malformed stored `pbt_history`,
    named) with their curves and histories, and the best COMPLETE member's lineage and replay
    config. (A thread: it reads the member's run config.)"""
    state = state_of(request)
    store = state.store
    row = readable_row(state, name)
    spec = lineage.population_spec(row.user_attrs)
    if spec is None:
        raise Conflict(f"study {name!r} is not a population study (scheduler pbt or pb2)")
    snapshot = store.snapshot(row)
    try:
        listed = lineage.members(snapshot.trials)
    except ValueError as err:  # a malformed stored history: the study's data, not a server error
        raise Conflict(f"study {name!r}: {err}") from None
    best = best_record(snapshot.trials, study_goals(row.user_attrs), snapshot.best)
    return {
        "scheduler": spec.scheduler,
        "perturbation_interval": spec.perturbation_interval,
        "members": serializers.clean(listed),
        "best": None if best is None else _best_member(request, name, snapshot, best),
    }


def _best_member(request: Request, name: str, snapshot: StudySnapshot, best: TrialRecord) -> dict[str, Any]:
    replay = _replay(request, name, snapshot, best)
    return {"number": best.number, "value": serializers.finite(best.value), **replay}


def replay_fields(request: Request, name: str, snapshot: StudySnapshot, trial: TrialRecord) -> dict[str, Any]:
    """`schedule` (the lineage) and `replay_config` of a population study's trial, as `GET .../best`
    adds them. Reads the trial's run config: call it from a thread."""
    found = _replay(request, name, snapshot, trial)
    return {"schedule": found["lineage"], "replay_config": found["config"]}


def _replay(request: Request, name: str, snapshot: StudySnapshot, trial: TrialRecord) -> dict[str, Any]:
    """The trial's lineage and the config replaying it (None without its run config); 409 when
    the histories it follows are not all stored."""
    try:
        schedule = lineage.lineage(lineage.histories(snapshot.trials), trial.number)
    except ValueError as err:
        raise Conflict(f"study {name!r}: trial {trial.number} cannot be replayed: {err}") from None
    state = state_of(request)
    settings = state.settings
    stored = study_attrs.STORAGE_PATH.of(readable_row(state, name).user_attrs)
    base = checkpoint.object_config(trial.user_attrs, settings.object_root, stored) or checkpoint.run_config(
        trial.user_attrs, (settings.storage_root,), settings.storage_root / name, {}
    )
    config = lineage.replay_config(base, schedule) if base else None
    return {"lineage": schedule, "config": serializers.clean(config)}
