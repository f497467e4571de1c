"""Early-stopping schedulers on the reported 2TA validation loss, measured in training steps.

The 2TA loss is an online estimate of what the trial's averaged weights achieve, which is what
makes comparing trials at equal steps (and so stopping the laggards) sound (thesis §3.4). Each
scheduler is a registered kind's (tuner.policies.kinds); `make_scheduler` builds one by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ray.tune.schedulers import TrialScheduler

from tuner.objectives.goals import Goals
from tuner.policies.early_stopping import EarlyStopping
from tuner.policies.kinds import SchedulerInputs, kind
from tuner.policies.rank_agreement import Curves


def make_scheduler(
    name: str,
    fixed: Mapping[str, Any],
    policy: EarlyStopping | None = None,
    history: Curves | None = None,
    goals: Goals | None = None,
) -> TrialScheduler:
    """The scheduler of the early-stopped kind `name`, with milestones on the evaluation grid of the
    task's settings: ASHA's grace period, reduction factor and brackets come from the study's
    early-stopping `policy` (`tuner.policies.early_stopping`, the same settings the multi-fidelity
    sampler reads); a kind that reads the study's finished curves starts from `history`."""
    return kind(name).build(SchedulerInputs(fixed, policy, history, goals))
