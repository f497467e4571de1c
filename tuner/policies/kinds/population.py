"""The population kinds: `pbt` and `pb2` (tuner.policies.population_rules: the rules; population_schedulers:
Ray's schedulers with the members' rules). Their members are asked at once and trained together;
a population trains one objective, never a trained model, never cost-aware."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ray import tune
from ray.tune.schedulers import PopulationBasedTraining

from tuner.policies.early_stopping import TIME_RESULT_KEY
from tuner.policies.kinds.base import OnCopy, SchedulerInputs, SweepKind
from tuner.policies.population_rules import QUANTILE, Mutable, explore_into, first_sync
from tuner.space.settings import max_steps_and_eval_every
from tuner.upstream import ray_private as private

NAMES = ("pbt", "pb2")


def check(spec: Any) -> str | None:
    """Population-based training ranks members by the validation loss alone and trains them."""
    if len(spec.objectives) > 1:
        return f"scheduler {spec.scheduler}: only with one objective (val_loss)"
    if spec.checkpoint is not None:
        return f"scheduler {spec.scheduler}: not for a study of a trained model (checkpoint)"
    if spec.cost_aware:
        return f"scheduler {spec.scheduler}: not with cost_aware"
    return None


def make_population_scheduler(
    name: str,
    ranges: Mapping[str, Mutable],
    interval: int,
    max_steps: int,
    on_copy: OnCopy | None = None,
    starts: Iterable[int] = (),
) -> PopulationBasedTraining:
    """`pbt` or `pb2` over the settings in `ranges`, perturbing every `interval` steps before
    `max_steps`, first past every member's start step (`starts`: a resumed population's, from its
    folders); `on_copy` hears of each copy (the metric and mode come from Tune's config)."""
    # Imported here: Ray's PB2 pulls in scikit-learn, 1.6 s at the start of every sweep otherwise.
    from tuner.policies.population_schedulers import MemberPB2, MemberPBT

    def explore(config: dict[str, Any]) -> dict[str, Any]:
        return explore_into(config, ranges)

    common: dict[str, Any] = dict(
        time_attr=TIME_RESULT_KEY,
        perturbation_interval=interval,
        quantile_fraction=QUANTILE,
        custom_explore_fn=explore,
        synch=True,
        max_steps=max_steps,
        first_sync=first_sync(starts, interval, max_steps),
        on_copy=on_copy,
    )
    scheduler: PopulationBasedTraining
    if name == "pb2":
        bounds = {n: [m.low, m.high] for n, m in ranges.items()}
        scheduler = MemberPB2(hyperparam_bounds={"trainer": bounds}, **common)
    elif name == "pbt":
        mutations = {
            n: (tune.loguniform if m.log else tune.uniform)(m.low, m.high) for n, m in ranges.items()
        }
        scheduler = MemberPBT(hyperparam_mutations={"trainer": mutations}, **common)
    else:
        raise ValueError(f"not a population scheduler: {name!r}")
    private.check_ray(scheduler)
    return scheduler


def _build(inputs: SchedulerInputs) -> PopulationBasedTraining:
    plan = inputs.population
    assert plan is not None, "a population kind runs a planned population"
    return make_population_scheduler(
        plan.scheduler,
        plan.ranges,
        plan.interval,
        max_steps_and_eval_every(inputs.fixed)[0],
        inputs.on_copy,
        inputs.starts,
    )


def _line(spec: Any, max_steps: int, eval_every: int) -> str:
    return ""  # a population's line is its plan's (PopulationPlan.describe), made by the planner


def _always(policy: Any) -> bool:
    """PBT draws its perturbations from Python's global RNG, PB2 its fits from numpy's."""
    return True


KINDS = tuple(
    SweepKind(
        name,
        "population",
        summary,
        _build,
        _line,
        check,
        fields=frozenset({"perturbation_interval"}),
        draws_randomly=_always,
    )
    for name, summary in (
        ("pbt", "population-based training: the worst quarter copy the best and perturb their settings"),
        ("pb2", "population-based bandits: as pbt, a GP-bandit choosing the settings"),
    )
)
