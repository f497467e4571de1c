"""The `hyperband` kind: asynchronous Hyperband with every bracket (Li et al. 2020, §3.3).

Where `asha` runs the policy's brackets (one, plain ASHA, unless the study expects to train
enough for three), `hyperband` runs all of Hyperband's: bracket s first compares at grace·η^s,
from bracket 0 (plain ASHA) to the last, which compares nowhere (every trial in it trains to the
end). It is the hedge for a task whose early values rank the final ones poorly, without choosing
a number of brackets. Ray's asynchronous form: its synchronous HyperBandScheduler pauses trials,
which rnntune's trainer (it keeps its own checkpoints) does not do.
"""

from __future__ import annotations

from typing import Any

from ray.tune.schedulers import TrialScheduler

from tuner.policies.early_stopping import EarlyStopping
from tuner.policies.kinds.base import SchedulerInputs, SweepKind
from tuner.policies.kinds.early import asha_scheduler, steps_and_policy

# The policy's bound on brackets (EarlyStopping.brackets' `le`).
MAX_BRACKETS = next(m.le for m in EarlyStopping.model_fields["brackets"].metadata if hasattr(m, "le"))


def every_bracket(policy: EarlyStopping, max_steps: int, eval_every: int) -> EarlyStopping:
    """The policy with Hyperband's brackets: one per rung, and one without (at most MAX_BRACKETS)."""
    brackets = min(len(policy.rungs(max_steps, eval_every)) + 1, MAX_BRACKETS)
    return policy.resolved(max_steps, eval_every).model_copy(update={"brackets": brackets})


def _build(inputs: SchedulerInputs) -> TrialScheduler:
    max_steps, every, policy = steps_and_policy(inputs)
    hedged = every_bracket(policy, max_steps, every)
    return asha_scheduler(SchedulerInputs(inputs.fixed, hedged, inputs.history, inputs.goals))


def _line(spec: Any, max_steps: int, eval_every: int) -> str:
    policy = every_bracket(spec.early_stopping(), max_steps, eval_every)
    return f"early stopping: {policy.describe(max_steps, eval_every)}; Hyperband: every bracket"


KIND = SweepKind(
    "hyperband",
    "early_stopped",
    "asynchronous Hyperband with every bracket, from plain ASHA to no early stopping",
    _build,
    _line,
    reads_rungs=True,
    draws_randomly=lambda policy: True,  # Ray draws each trial's bracket from numpy's global RNG
)
