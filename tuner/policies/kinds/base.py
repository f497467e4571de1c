"""What every kind of sweep declares: `SweepKind`, one registry row (tuner.policies.kinds)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ray.tune.schedulers import TrialScheduler

from tuner.objectives.goals import Goals
from tuner.policies.early_stopping import EarlyStopping
from tuner.policies.population_rules import PopulationPlan
from tuner.policies.rank_agreement import Curves

# How Tune runs a kind (tuner.sweeps.drive.wiring): trials asked by the study's searcher as Tune
# runs them under a scheduler; a population asked at once; a trained model evaluated once a trial.
Family = Literal["early_stopped", "population", "trained_model"]
# Called when a population member copies another (tuner.policies.population_schedulers.OnCopy).
OnCopy = Callable[[str, str, int, float | None, dict[str, Any]], None]


@dataclass(frozen=True)
class SchedulerInputs:
    """What a kind's scheduler is built from: the task's fixed settings, the early-stopping policy,
    the study's finished curves (kinds that read them), its goals, and a population's plan, copy hook
    and members' start steps (population kinds)."""

    fixed: Mapping[str, Any]
    policy: EarlyStopping | None = None
    history: Curves | None = None
    goals: Goals | None = None
    population: PopulationPlan | None = None
    on_copy: OnCopy | None = None
    starts: tuple[int, ...] = ()


def accepts(spec: Any) -> str | None:
    """A kind's spec check that finds nothing to refuse."""
    return None


@dataclass(frozen=True)
class SweepKind:
    """One kind of sweep: its name (the spec's `scheduler`), how Tune runs it (`family`), its docs
    line, its Ray scheduler, the spec fields only it reads (`fields`), its spec check (`check(spec)`: why the spec cannot run as this kind,
    or None), its header line (`describe(spec, max_steps, eval_every)`), and its decisions: whether
    it reads the policy's rungs or the study's finished curves, and whether Ray draws from the
    global random states under it (`draws_randomly(policy)`: the driver seeds them)."""

    name: str
    family: Family
    summary: str
    build: Callable[[SchedulerInputs], TrialScheduler]
    describe: Callable[[Any, int, int], str]
    check: Callable[[Any], str | None] = accepts
    fields: frozenset[str] = frozenset()  # spec fields only this kind (and kinds naming them) reads
    reads_rungs: bool = False
    reads_history: bool = False
    draws_randomly: Callable[[EarlyStopping], bool] = lambda policy: False

    @property
    def population(self) -> bool:
        """Whether the kind trains a population (its members asked at once, no search algorithm)."""
        return self.family == "population"

    @property
    def evaluates_only(self) -> bool:
        """Whether a trial evaluates a trained model instead of training (dynamic evaluation)."""
        return self.family == "trained_model"
