"""Population-based training's rules, as pure functions: which settings a member may change mid-run
and within what ranges, how often it may, and how a member's history is kept.

PBT (Jaderberg et al. 2017) trains a population at once; every `perturbation_interval` steps the
bottom quarter copies a top member's checkpoint and perturbs its settings (Ray Tune's
PopulationBasedTraining, synchronous), or picks them with PB2's GP-bandit (Parker-Holder et al.
2020, Ray Tune's PB2). The trainer declares which settings may change mid-run
(`trainer.MUTABLE_SETTINGS`: the learning rate, l2 and the dropouts, never the model's shape); the
space's real-valued ranges of those are what the population explores, and a value perturbed past
its range is put back at the edge (Ray multiplies by 0.8 or 1.2 unbounded). Each member is one
study trial whose `pbt_history` holds one segment per change (tuner.policies.population_history).
Nothing here imports Ray: the rules are tested with plain values (tests/tuner/policies/test_population_rules.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tuner.errors import InvalidInput

# The bottom quarter copies the top quarter at each perturbation (Ray's default, as in the PBT paper).
QUANTILE = 0.25
# Ray checkpoints kept per member. Synchronous PBT pauses every member at each perturbation until
# all have reached it, so a member copies a checkpoint of the current round while its source has
# written at most the next one: two suffice, and a third is margin (Ray's own warning is at <= 2).
CHECKPOINTS_KEPT = 3
# Default perturbation interval: about this many perturbations in a run, on the evaluation grid.
DEFAULT_ROUNDS = 8


class PopulationError(InvalidInput):
    """A population setting that cannot run; the message names the field and the allowed values."""


@dataclass(frozen=True)
class Mutable:
    """A setting the population may change mid-run, and the range it explores."""

    name: str
    low: float
    high: float
    log: bool

    def clip(self, value: float) -> float:
        return min(max(float(value), self.low), self.high)


def mutable_ranges(params: Mapping[str, Any], mutable: Iterable[str]) -> dict[str, Mutable]:
    """The space's unconditional real-valued ranges of the settings that may change mid-run.
    (A conditional range applies to some members only, so none of them is perturbed.)"""
    allowed = set(mutable)
    return {
        name: Mutable(name, float(spec.low), float(spec.high), spec.scale == "log")
        for name, spec in params.items()
        if name in allowed and getattr(spec, "scale", None) in ("linear", "log") and not spec.when
    }


def check_space(ranges: Mapping[str, Mutable], scheduler: str, mutable: Iterable[str]) -> None:
    """Refuse a population scheduler over a space that tunes no setting a member may change."""
    if not ranges:
        raise PopulationError(
            f"scheduler {scheduler} needs a space that tunes a setting which may change mid-run "
            f"(a real-valued range without `when` of one of: {', '.join(sorted(mutable))})"
        )


def interval(given: int | None, max_steps: int, eval_every: int) -> int:
    """The perturbation interval in steps: `given`, checked, or about max_steps / DEFAULT_ROUNDS on
    the evaluation grid (members are compared at evaluations only)."""
    if given is None:
        return max(eval_every, round(max_steps / DEFAULT_ROUNDS / eval_every) * eval_every)
    if given % eval_every or not eval_every <= given < max_steps:
        raise PopulationError(
            f"perturbation_interval must be a multiple of eval_every ({eval_every}) between "
            f"{eval_every} and max_steps ({max_steps}) exclusive, not {given}"
        )
    return given


def first_sync(starts: Iterable[int], interval: int, max_steps: int) -> int:
    """The population's first sync point: the first perturbation step past every member's start
    (a resumed population's members start from their folders, at different steps: they meet at
    the first step all of them reach, so every copy is between members at the same step). A
    member already at `max_steps` only reports its end: the others still meet."""
    return (max((s for s in starts if s < max_steps), default=0) // interval + 1) * interval


def at_sync(step: int, sync: float, interval: int) -> bool:
    """Whether a member's result at `step` is one the scheduler acts on: a perturbation step no
    earlier than the population's next sync point. Others (between perturbation steps, an
    evaluation a restarted member reports again, a member retried in place catching up) only
    train on, so a restart can never set off a round at a step the others are not at."""
    return step % interval == 0 and step >= sync


def explore_into(config: dict[str, Any], ranges: Mapping[str, Mutable]) -> dict[str, Any]:
    """`config` with every perturbed setting put back within its range (PBT's `custom_explore_fn`)."""
    trainer = dict(config["trainer"])
    for name, mutable in ranges.items():
        if name in trainer:
            trainer[name] = mutable.clip(trainer[name])
    return {**config, "trainer": trainer}


MEMBER = "member"  # the config key Tune's grid runs over: the member's index in the population
# The config entries that say which member a Ray trial is: never copied from the member exploited.
IDENTITY = ("trial_number",)
TRAINER_IDENTITY = ("run_dir",)


def keep_identity(new: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """The config a member continues with after copying another's: the other's settings, perturbed,
    with its own study trial and run folder (Ray's PBT copies the whole config, identity included)."""
    out = {**new, **{key: own[key] for key in IDENTITY if key in own}}
    out["trainer"] = {
        **new["trainer"],
        **{key: own["trainer"][key] for key in TRAINER_IDENTITY if key in own["trainer"]},
    }
    return out


def copy_took_place(
    segment: Mapping[str, Any], own_run_dir: str, saved_run_dir: str | None, saved_step: int | None
) -> bool:
    """Whether a member's recorded copy (`segment`, written when the scheduler decided it) happened,
    from its folder's last.pt (the run folder and step it was written with; None: no checkpoint).
    The driver records a copy before the member restarts, so a sweep stopped in between leaves a
    copy the member never made: its last.pt is its own, at or before the copy's step."""
    if segment.get("from_trial") is None:
        return True
    if saved_step is None:
        return False
    return saved_step > int(segment["step"]) or (saved_run_dir is not None and saved_run_dir != own_run_dir)


@dataclass(frozen=True)
class PopulationPlan:
    """What a population sweep explores: the ranges of its mutable settings and how often."""

    scheduler: str
    ranges: dict[str, Mutable]
    interval: int

    def describe(self, members: int) -> str:
        names = ", ".join(self.ranges)
        return (
            f"population-based training ({self.scheduler}): {members} members, every {self.interval} "
            f"steps the worst {QUANTILE:.0%} copy the best and change {names}"
        )


def plan_population(
    scheduler: str,
    params: Mapping[str, Any],
    mutable: Iterable[str],
    given_interval: int | None,
    max_steps: int,
    eval_every: int,
) -> PopulationPlan:
    """The population a sweep of `scheduler` (a population kind's) trains; PopulationError when the
    space tunes nothing a member may change or the interval is off the evaluation grid."""
    mutable = frozenset(mutable)
    ranges = mutable_ranges(params, mutable)
    check_space(ranges, scheduler, mutable)
    return PopulationPlan(scheduler, ranges, interval(given_interval, max_steps, eval_every))
