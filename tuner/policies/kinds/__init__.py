"""The kinds of sweep, one registry (like the samplers'): each kind (`SweepKind`, base.py) owns its
names, its spec checks, its header line, its Ray scheduler and its decisions; how Tune runs each
family of kinds (search algorithm and scheduler, or a population; the trainable; the events sent
back) is `tuner.sweeps.drive.wiring`. A new scheduler is one module (or a row in one), one row of
`KINDS` here, and its docs line; tests/tuner/policies/test_kinds.py checks every registered kind.
"""

from __future__ import annotations

from typing import Any

from tuner.policies.kinds import early, hyperband, population, trained_model
from tuner.policies.kinds.base import SchedulerInputs, SweepKind

__all__ = [
    "DEFAULT_SCHEDULER",
    "KINDS",
    "SCHEDULERS",
    "SchedulerInputs",
    "SweepKind",
    "kind",
    "kind_of",
    "problem",
]

# The spec's `scheduler` values, in the order docs and help list them.
KINDS: dict[str, SweepKind] = {k.name: k for k in (*early.KINDS, hyperband.KIND, *population.KINDS)}
SCHEDULERS = tuple(KINDS)
DEFAULT_SCHEDULER = early.DEFAULT
LEGACY_SCHEDULER = "asha"  # what a study written before the spec stored scheduled by default
RANK_SCHEDULERS = tuple(name for name, k in KINDS.items() if k.reads_rungs)  # on the policy's rungs
TRAINED_MODEL = trained_model.KIND


def kind(name: str) -> SweepKind:
    """The registered kind of scheduler `name`; ValueError naming the registered ones."""
    if name not in KINDS:
        raise ValueError(f"scheduler must be one of {', '.join(SCHEDULERS)}, not {name!r}")
    return KINDS[name]


def kind_of(spec: Any) -> SweepKind:
    """The kind a spec runs as: a study of a trained model (its `checkpoint`), else its scheduler's."""
    return TRAINED_MODEL if spec.checkpoint else kind(spec.scheduler)


def problem(spec: Any) -> str | None:
    """Why a spec cannot run: its scheduler's kind's check, then the trained-model kind's for a
    study of a checkpoint (None when both accept it)."""
    kinds = (kind(spec.scheduler), *((TRAINED_MODEL,) if spec.checkpoint else ()))
    return next((p for k in kinds if (p := k.check(spec)) is not None), None)


def field_problem(field: str, scheduler: str | None) -> str | None:
    """Why a spec field cannot be set under `scheduler`: a field some kinds own (`SweepKind.fields`)
    set for a kind that does not (None when it may be set)."""
    owners = [name for name, k in KINDS.items() if field in k.fields]
    if not owners or (scheduler in KINDS and field in KINDS[scheduler].fields):
        return None
    return f"only with scheduler {' or '.join(owners)}"
