"""How Tune runs each family of sweep kinds (tuner.policies.kinds): its search algorithm and
scheduler, or a population asked at once; the function its trials run; the events it sends back.

`wire` is what `execute` asks of a kind: early-stopped and trained-model kinds give Tune the
study's searcher and the kind's scheduler (a trained-model trial evaluates, `run_dyneval_trial`);
a population kind asks its members now and binds Ray's trials to them (`PopulationEvents`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna

from tuner.policies.kinds import SchedulerInputs, SweepKind
from tuner.storage.study import finished_curves
from tuner.sweeps.drive.plan import SweepPlan
from tuner.sweeps.drive.searcher import StudySearcher

Trainable = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Wiring:
    """A kind's part of Tune's run: `search`, TuneConfig's search settings (search algorithm,
    scheduler, samples, trials at once); `param_space` (a population's members); `callbacks`, the kind's own
    (before the shared ones); `members`, a population's size (None: trials asked as Tune runs
    them); `note`, a line for the log."""

    search: dict[str, Any]
    trainable: Trainable
    param_space: dict[str, Any] | None = None
    callbacks: list[Any] = field(default_factory=list)
    members: int | None = None
    note: str | None = None


def trainable(kind: SweepKind) -> Trainable:
    """The function a kind's trials run, chosen once by the driver: training (`run_trial`), or for
    a study of a trained model, dynamic evaluation of it (`tuner.sweeps.dyneval.trial`)."""
    if kind.evaluates_only:
        from tuner.sweeps.dyneval.trial import run_dyneval_trial

        return run_dyneval_trial
    from tuner.sweeps.trial.trainable import run_trial

    return run_trial


def wire(plan: SweepPlan, study: optuna.Study, searcher: StudySearcher, parallel: int) -> Wiring:
    """The plan's kind wired to Tune, `parallel` trials at once (module docstring)."""
    if plan.kind.population:
        return _population(plan, searcher, parallel)
    return _searched(plan, study, searcher, parallel)


def _searched(plan: SweepPlan, study: optuna.Study, searcher: StudySearcher, parallel: int) -> Wiring:
    """The searcher asks each trial as Tune runs it, under the kind's scheduler."""
    # Only a kind that reads the study's finished curves pays for reading them.
    history = finished_curves(study) if plan.kind.reads_history else None
    inputs = SchedulerInputs(plan.space.fixed, plan.spec.early_stopping(), history, plan.spec.goals())
    search = dict(
        search_alg=searcher,
        scheduler=plan.kind.build(inputs),
        num_samples=plan.budget,
        max_concurrent_trials=parallel,
    )
    return Wiring(search, trainable(plan.kind))


def _population(plan: SweepPlan, searcher: StudySearcher, parallel: int) -> Wiring:
    """PBT/PB2 take no searcher: the members are asked now, and generated as a grid."""
    from tuner.sweeps.drive.members import PopulationEvents, population_search

    search = population_search(plan, searcher, parallel)
    members, note, space = search.pop("members"), search.pop("note"), search.pop("param_space")
    return Wiring(search, trainable(plan.kind), space, [PopulationEvents(searcher)], members, note)
