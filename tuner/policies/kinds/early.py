"""The early-stopped kinds: trials asked by the study's searcher, stopped at rungs on the 2TA
validation loss (`adaptive`, `asha`), by the median rule (`median`), or never (`none`); with
several objectives the ASHA kinds stop a trial only when dominated at a rung (MO-ASHA)."""

from __future__ import annotations

import math
from typing import Any

from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, MedianStoppingRule, TrialScheduler

from tuner.policies.early_stopping import TIME_RESULT_KEY, EarlyStopping
from tuner.policies.kinds.base import SchedulerInputs, SweepKind
from tuner.policies.pareto_rungs import ParetoASHA
from tuner.policies.rank_agreement import AdaptiveASHA, describe_adaptive
from tuner.space.settings import max_steps_and_eval_every

DEFAULT = "adaptive"


def steps_and_policy(inputs: SchedulerInputs) -> tuple[int, int, EarlyStopping]:
    """(max_steps, eval_every, the policy resolved on that grid) of the task's settings."""
    max_steps, every = max_steps_and_eval_every(inputs.fixed)
    return max_steps, every, (inputs.policy or EarlyStopping()).resolved(max_steps, every)


def pareto(inputs: SchedulerInputs) -> TrialScheduler | None:
    """MO-ASHA when the study has several objectives, else None."""
    if inputs.goals is None or not inputs.goals.several:
        return None
    max_steps, every, policy = steps_and_policy(inputs)
    return ParetoASHA(
        [(o.name, o.direction) for o in inputs.goals.objectives],
        max_steps=max_steps,
        grace_period=int(policy.grace_steps or every),
        reduction_factor=policy.reduction_factor,
        brackets=policy.brackets or 1,
    )


def _adaptive(inputs: SchedulerInputs) -> TrialScheduler:
    max_steps, every, policy = steps_and_policy(inputs)
    return pareto(inputs) or AdaptiveASHA(policy, max_steps, every, inputs.history)


def asha_scheduler(inputs: SchedulerInputs) -> TrialScheduler:
    """Ray's ASHA on the policy's grace period, reduction factor and brackets (MO-ASHA with
    several objectives)."""
    max_steps, every, policy = steps_and_policy(inputs)
    return pareto(inputs) or ASHAScheduler(
        time_attr=TIME_RESULT_KEY,
        max_t=max_steps,
        grace_period=int(policy.grace_steps or every),
        reduction_factor=policy.reduction_factor,
        brackets=policy.brackets or 1,
        stop_last_trials=False,
    )


def _median(inputs: SchedulerInputs) -> TrialScheduler:
    """Compares from the policy's grace period on and never pauses trials (pausing would restart
    a trainer that keeps its own checkpoints)."""
    _, every, policy = steps_and_policy(inputs)
    return MedianStoppingRule(
        time_attr=TIME_RESULT_KEY,
        grace_period=int(policy.grace_steps or every),
        min_samples_required=3,
        min_time_slice=math.inf,  # type: ignore[arg-type]  # Ray annotates int; inf = never pause
        hard_stop=True,
    )


def _fifo(inputs: SchedulerInputs) -> TrialScheduler:
    return FIFOScheduler()


def rungs_line(spec: Any, max_steps: int, eval_every: int) -> str:
    """The header's line of a kind on the policy's rungs."""
    return f"early stopping: {spec.early_stopping().describe(max_steps, eval_every)}"


def _adaptive_line(spec: Any, max_steps: int, eval_every: int) -> str:
    return f"{rungs_line(spec, max_steps, eval_every)}; {describe_adaptive()}"


def _named(name: str) -> Any:
    return lambda spec, max_steps, eval_every: f"early stopping: {name}"


def _brackets(policy: EarlyStopping) -> bool:
    """Ray's asynchronous Hyperband draws each trial's bracket from numpy's global RNG."""
    return bool(policy.brackets and policy.brackets > 1)


KINDS = (
    SweepKind(
        "adaptive",
        "early_stopped",
        "ASHA whose rungs prune once the study's trials show their values rank like the next rung's",
        _adaptive,
        _adaptive_line,
        reads_rungs=True,
        reads_history=True,
        draws_randomly=_brackets,
    ),
    SweepKind(
        "asha",
        "early_stopped",
        "Ray's ASHA on the policy's rungs",
        asha_scheduler,
        rungs_line,
        reads_rungs=True,
        draws_randomly=_brackets,
    ),
    SweepKind(
        "median",
        "early_stopped",
        "the median stopping rule from the grace period on",
        _median,
        _named("median"),
    ),
    SweepKind(
        "none",
        "early_stopped",
        "every trial trains to the end",
        _fifo,
        _named("none"),
    ),
)
