"""Turning study rows and trial records into the API's response shapes (see `models`)."""

from __future__ import annotations

import math
from typing import Any

from tuner.analysis.reads import StudyRow, TrialRecord
from tuner.errors import InvalidInput
from tuner.policies import kinds
from tuner.spec import SweepSpec
from tuner.storage import study_attrs, trial_attrs
from tuner.storage.stored_json import Unreadable
from tuner.sweeps.launch.launcher import Handle

FINISHED_STATES = ("COMPLETE", "PRUNED", "FAIL")


def finite(value: Any) -> float | None:
    """JSON has no NaN/Infinity: non-finite numbers are reported as null."""
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def status(row: StudyRow, handle: Handle | None) -> str:
    """The stored status, corrected by what this API knows about the sweep process it runs."""
    if handle is not None and handle.running:
        return "stopping" if handle.stop_requested else "running"
    return row.status


def stored_problem(attrs: dict[str, Any]) -> str | None:
    """Why this server cannot read a study's stored attributes, naming the attribute (a value of
    the wrong type, a spec it cannot read, a stored value that is not JSON, huge or too deeply nested:
    `tuner.storage.stored_json`), or None. Such a study is listed with the problem, and its own
    routes answer 409 (`tuner.api.routes.common.readable_row`)."""
    for key, value in attrs.items():
        if isinstance(value, Unreadable):
            return f"attribute {key[:100]}: the stored value {value.reason}"[:300]
    for attr in study_attrs.ALL:
        if attrs.get(attr.key) is not None:  # null reads as absent
            try:
                study_attrs.checked(attr.key, attrs[attr.key])
            except TypeError as err:
                return str(err)[:300]
    try:
        SweepSpec.stored_in(attrs)
    except InvalidInput as err:  # a stored spec names its field; a legacy study its attribute
        text = str(err)
        return (text if text.startswith("attribute ") else f"attribute spec: {text}")[:300]
    return None


def study_summary(row: StudyRow, handle: Handle | None) -> dict[str, Any]:
    attrs = row.user_attrs
    problem = stored_problem(attrs)
    spec = None if problem else SweepSpec.stored_in(attrs)  # unreadable: shown without its options
    n_trials = spec.n_trials if spec else None
    finished = sum(row.counts.get(s, 0) for s in FINISHED_STATES)
    return {
        "name": row.name,
        "status": status(row, handle),
        "direction": row.direction,
        "space": _text(study_attrs.SPACE.of(attrs)),
        "sampler": spec.sampler if spec else None,
        "n_trials": n_trials,
        "parallel": spec.parallel if spec else None,
        "created_at": _text(study_attrs.CREATED_AT.of(attrs)),
        "counts": {state: n for state, n in row.counts.items()},
        "best_value": finite(row.best_value),
        "progress": min(1.0, finished / n_trials) if n_trials else None,
        "problem": problem,
        "sweep_family": kinds.kind_of(spec).family if spec else None,
    }


def clean(value: Any) -> Any:
    """Attrs and params as JSON can carry them (non-finite floats become null)."""
    if isinstance(value, float):
        return finite(value)
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def trial_summary(trial: TrialRecord) -> dict[str, Any]:
    attrs = trial.user_attrs
    error = trial_attrs.ERROR.of(attrs)
    return {
        "number": trial.number,
        "state": trial.state,
        "value": finite(trial.value),
        # a population member's model as trained at the end (shape copied included); Optuna's
        # params, as first sampled for it, are labelled `initial_params`
        "params": clean(trial.params_in_force),
        "initial_params": clean(trial.initial_params),
        "problem": _history_problem(trial),
        "datetime_start": trial.datetime_start,
        "datetime_complete": trial.datetime_complete,
        "node": clean(trial_attrs.NODE.of(attrs)),
        "wall_time_s": finite(trial_attrs.WALL_TIME_S.of(attrs)),
        "seconds_per_step": finite(trial_attrs.SECONDS_PER_STEP.of(attrs)),
        "device": _text(trial_attrs.DEVICE.of(attrs)),
        "cuda_path_used": _text(trial_attrs.CUDA_PATH_USED.of(attrs)),
        "cuda_path_calls": _counts(trial_attrs.CUDA_PATH_CALLS.of(attrs)),
        "diverged_at": _step(trial_attrs.DIVERGED_AT.of(attrs)),
        "error": None if error is None else str(error),
    }


def _history_problem(trial: TrialRecord) -> str | None:
    """Why the trial's stored population history cannot be read (None: absent or well-formed)."""
    problem = trial.history_problem
    return None if problem is None else f"trial {trial.number}: {problem}"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _step(value: Any) -> int | None:
    """A stored step read back, or None for anything else (an older or planted row)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _counts(value: Any) -> dict[str, int] | None:
    """A stored {name: count} read back, or None for anything else (an older or planted row)."""
    if not isinstance(value, dict):
        return None
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


def trial_detail(trial: TrialRecord) -> dict[str, Any]:
    return {
        **trial_summary(trial),
        "distributions": {name: spec.as_dict() for name, spec in trial.specs.items()},
        "learning_curve": [{"step": s, "value": finite(v)} for s, v in trial.curve],
        "user_attrs": clean(trial.user_attrs),
    }
