"""The search space over the union of a study's trials, for rnntune's GP samplers.

Why: Optuna's `IntersectionSearchSpace` keeps a parameter only if every trial has it with the very
same distribution, so a conditional parameter (`mogrifier_rank`, only sampled when
`mogrifier_rounds >= 1`) and a range widened mid-study both leave the GP and are drawn at random.
Here every parameter seen in a COMPLETE, PRUNED or RUNNING trial is kept. Distributions of one kind
for a name (Float or Int with equal `log` and `step`, Categorical with equal choices) merge into the
widest range, so old trials still lie inside a widened one; when the kinds differ, the most recent
trial's kind wins and trials with the other kind count as not having the parameter (inactive).
Single-valued distributions are left out, as Optuna's GPSampler does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import FrozenTrial, TrialState

STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)


def kind(distribution: BaseDistribution) -> tuple:
    """What must match for two distributions of one name to merge (everything but the range)."""
    if isinstance(distribution, CategoricalDistribution):
        return ("categorical", tuple(map(repr, distribution.choices)))
    if isinstance(distribution, (FloatDistribution, IntDistribution)):
        return (type(distribution).__name__, distribution.log, distribution.step)
    return (type(distribution).__name__,)


def widest(a: BaseDistribution, b: BaseDistribution) -> BaseDistribution:
    """The union of two ranges of the same `kind`: [min low, max high]."""
    if isinstance(a, FloatDistribution) and isinstance(b, FloatDistribution):
        return FloatDistribution(min(a.low, b.low), max(a.high, b.high), log=a.log, step=a.step)
    if isinstance(a, IntDistribution) and isinstance(b, IntDistribution):
        return IntDistribution(min(a.low, b.low), max(a.high, b.high), log=a.log, step=a.step)
    return a


def union_search_space(trials: Iterable[FrozenTrial]) -> dict[str, BaseDistribution]:
    """The union search space of `trials` (all of them; filter the states first), sorted by name."""
    merged: dict[str, dict[tuple, BaseDistribution]] = {}
    latest: dict[str, tuple[int, tuple]] = {}
    for trial in trials:
        for name, distribution in trial.distributions.items():
            key = kind(distribution)
            by_kind = merged.setdefault(name, {})
            by_kind[key] = widest(by_kind[key], distribution) if key in by_kind else distribution
            if name not in latest or trial.number >= latest[name][0]:
                latest[name] = (trial.number, key)
    space = {name: merged[name][key] for name, (_, key) in latest.items()}
    return {name: d for name, d in sorted(space.items()) if not d.single()}


def study_search_space(trials: Iterable[FrozenTrial]) -> dict[str, BaseDistribution]:
    """`union_search_space` of the COMPLETE, PRUNED and RUNNING ones among `trials`."""
    return union_search_space(t for t in trials if t.state in STATES)


def active_params(trial: FrozenTrial, space: dict[str, BaseDistribution]) -> dict[str, Any]:
    """The parameters of `trial` that the GP sees as set: in `space`, of its kind and in its range.

    Others (absent, of another kind, or outside the range: a prior trial from a wider space) are
    inactive. Running trials' params are the ones suggested so far."""
    out = {}
    for name, distribution in space.items():
        if name not in trial.params:
            continue
        own = trial.distributions.get(name)
        if own is not None and kind(own) != kind(distribution):
            continue
        if contains(distribution, trial.params[name]):
            out[name] = trial.params[name]
    return out


def contains(distribution: BaseDistribution, value: Any) -> bool:
    """Whether `value` (external representation) lies in `distribution`'s range."""
    if isinstance(distribution, CategoricalDistribution):
        return any(value == c for c in distribution.choices)
    if isinstance(distribution, (FloatDistribution, IntDistribution)):
        try:
            return distribution.low <= float(value) <= distribution.high
        except (TypeError, ValueError):
            return False
    return False
