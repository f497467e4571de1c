"""The sweep's early-stopping policy, in one place: ASHA's rungs on the task's evaluation grid.

The scheduler (`tuner.policies.schedulers`) stops trials at these rungs and the multi-fidelity
sampler (`tuner.samplers.bohb_rule`, which the default `gp_fidelity` starts with) reads the same
rungs back from the study (its sweep spec), so what the search learns from pruned
trials matches where they were pruned.
ASHA (Li et al. 2020): at rung r = grace·η^k steps a trial continues only if it is in the best 1/η
of the trials that reached r. With `brackets` > 1 it is asynchronous Hyperband (Li et al. 2020,
§3.3, as Ray Tune runs it): each trial joins one bracket s < brackets, whose rungs start at
grace·η^s, so some trials are first compared later (or never), a hedge for when early values rank
the final ones poorly. Every bracket's rungs are among bracket 0's, which `rungs` returns.
The default number of brackets depends on how much the sweep is expected to train (`resolved`):
the hedge costs steps that only a large budget repays (docs/samplers.md, "Defaults"). The default
grace period depends on the number of trials: a small study moves its first rung later, or stops
comparing at all, until it expects at least MIN_COMPLETE trials to run to the end, so that its best
trial and `finalize` choose among several finished ones (docs/sweeps.md, "Small studies").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tuner.errors import InvalidInput
from tuner.storage import study_attrs

TIME_RESULT_KEY = "step"  # what the schedulers count: training steps, as every trial reports them
# Chosen by bench/multifidelity.py on real tiny-space learning curves (docs/samplers.md).
DEFAULT_GRACE_FRACTION = Fraction(1, 4)
DEFAULT_REDUCTION_FACTOR = 3
DEFAULT_GRACE = f"{DEFAULT_GRACE_FRACTION} of max_steps"  # how help texts and docs say it
# Brackets by default: 1 (plain ASHA) for a sweep expected to train fewer than AUTO_BRACKETS_FROM
# full trials' worth of steps, else AUTO_BRACKETS: the crossover bench/multifidelity.py measured
# on real learning curves (docs/samplers.md, "Defaults").
AUTO_BRACKETS = 3
AUTO_BRACKETS_FROM = 64
# A study expects at least this many COMPLETE trials under the default grace period
# (`expected_complete`); a smaller study compares later or not at all (docs/sweeps.md).
MIN_COMPLETE = 3
DEFAULT_BRACKETS = (
    f"1, plain ASHA, for a sweep expected to train fewer than {AUTO_BRACKETS_FROM} full trials' worth "
    f"of steps (its step budget, or its trials at their expected length under {AUTO_BRACKETS} "
    f"brackets), else {AUTO_BRACKETS}"
)


class EarlyStoppingError(InvalidInput):
    """A bad policy value; the message names the field and its allowed range."""


class EarlyStopping(BaseModel):
    """ASHA's settings as a user sets them; `rungs` resolves them on a task's evaluation grid."""

    model_config = ConfigDict(extra="forbid")

    grace_steps: int | None = Field(
        default=None,
        ge=1,
        description=f"steps before the first rung (rounded up to the eval grid); default {DEFAULT_GRACE}",
    )
    reduction_factor: int = Field(
        default=DEFAULT_REDUCTION_FACTOR,
        ge=2,
        le=16,
        description="η: a trial continues past a rung if it is in the best 1/η of the trials there",
    )
    brackets: int | None = Field(
        default=None,
        ge=1,
        le=8,
        description="asynchronous Hyperband brackets: bracket s first compares at grace·η^s steps; "
        f"each trial joins one (drawn by Ray Tune, larger brackets likelier); default {DEFAULT_BRACKETS}",
    )

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> EarlyStopping:
        """The policy from a stored or given dict; EarlyStoppingError names a bad field and its range."""
        try:
            return cls.model_validate(dict(raw or {}))
        except ValidationError as err:
            raise EarlyStoppingError("; ".join(_describe(e) for e in err.errors())) from None

    def resolved(
        self, max_steps: int, eval_every: int, n_trials: int | None = None, budget: float | None = None
    ) -> EarlyStopping:
        """The policy with its grace period made explicit, on the grid of `eval_every` steps, and its
        brackets for a sweep of `n_trials` trials within `budget` full trials' worth of steps (both
        None: unknown, plain ASHA; also how a policy stored before brackets existed reads)."""
        if self.grace_steps is not None and self.grace_steps > max_steps:
            raise EarlyStoppingError(
                f"grace_steps must be between 1 and max_steps ({max_steps}), not {self.grace_steps}"
            )
        wanted = (
            self.grace_steps if self.grace_steps is not None else float(max_steps * DEFAULT_GRACE_FRACTION)
        )
        # On a coarse grid (eval_every near max_steps) the first comparison can be the last step.
        grace = min(_round_up(wanted, eval_every), max_steps)
        out = self.model_copy(update={"grace_steps": grace, "brackets": self.brackets or 1})
        if self.brackets is None and (n_trials is not None or budget is not None):
            hedged = out.model_copy(update={"brackets": AUTO_BRACKETS})
            # Brackets delay comparisons, which pays only when enough trials run (bench/multifidelity.py).
            full_trials = min(
                budget if budget is not None else math.inf,
                n_trials * hedged.expected_length(max_steps, eval_every)
                if n_trials is not None
                else math.inf,
            )
            out = hedged if full_trials >= AUTO_BRACKETS_FROM else out
        if self.grace_steps is None and out.brackets == 1 and n_trials is not None:
            out = out._small_study(max_steps, eval_every, n_trials)
        return out

    def _small_study(self, max_steps: int, eval_every: int, n_trials: int) -> EarlyStopping:
        """This resolved plain-ASHA policy with its first rungs dropped (grace moved to a later rung,
        or to max_steps: no comparison) until `n_trials` trials expect MIN_COMPLETE to finish."""
        for grace in [*self.rungs(max_steps, eval_every), max_steps]:
            later = self.model_copy(update={"grace_steps": grace})
            # Every arrival at a rung passes with probability at least 1/η, so n/η^rungs trials are
            # expected to finish at least: enough, without the exact count, for all but small studies.
            surely = (
                n_trials / self.reduction_factor ** len(later.rungs(max_steps, eval_every)) >= MIN_COMPLETE
            )
            if (
                grace == max_steps
                or surely
                or later.expected_complete(n_trials, max_steps, eval_every) >= MIN_COMPLETE
            ):
                return later
        return self

    def expected_complete(self, n_trials: int, max_steps: int, eval_every: int) -> float:
        """The expected number of `n_trials` trials that plain ASHA lets run to the end if the values
        ranked trials at random, as Ray Tune decides: a trial reaching a rung passes if its value is
        at least the (1 - 1/η) quantile of the m values recorded there before it (linear
        interpolation, as numpy's percentile), which a random value is with probability
        (m - (m - 1)(1 - 1/η)) / (m + 1) (1 for the first); trials that pass arrive at the next rung.
        Relative ranks of exchangeable values are independent (Rényi), so each rung's count of
        passes is a sum of independent Bernoulli draws, propagated rung to rung as a distribution:
        the count among the first n arrivals is built from the count among the first n - 1, so a
        rung costs O(n_trials²)."""
        q = 1 - 1 / self.reduction_factor
        passes = np.array([1.0] + [(m - (m - 1) * q) / (m + 1) for m in range(1, n_trials)])
        arrivals = np.zeros(n_trials + 1)  # P(k trials reach the rung), k = 0..n_trials
        arrivals[n_trials] = 1.0
        for _ in self.rungs(max_steps, eval_every):
            passed = arrivals[0] * np.eye(1, n_trials + 1).ravel()
            count = np.zeros(n_trials + 1)  # distribution of passes among the first n arrivals
            count[0] = 1.0
            for n in range(1, n_trials + 1):
                p = passes[n - 1]
                count[1 : n + 1] = count[1 : n + 1] * (1 - p) + count[:n] * p
                count[0] *= 1 - p
                if arrivals[n] != 0.0:
                    passed += arrivals[n] * count
            arrivals = passed
        return float(np.arange(n_trials + 1) @ arrivals)

    def expected_length(self, max_steps: int, eval_every: int) -> float:
        """A trial's expected length in full trials' worth under this policy if the values ranked
        trials at random: it passes each rung with probability 1/η, and joins bracket s with Ray
        Tune's probability, proportional to e^(its number of rungs) (Li et al. 2020, §3.3)."""
        eta, rungs = self.reduction_factor, self.rungs(max_steps, eval_every)
        lengths, weights = [], []
        for s in range(self.brackets or 1):  # bracket s compares at bracket 0's rungs from the s-th on
            total, alive, last = 0.0, 1.0, 0
            for step in [*rungs[s:], max_steps]:
                total, alive, last = total + alive * (step - last), alive / eta, step
            lengths.append(total / max_steps)
            weights.append(math.exp(len(rungs[s:]) - len(rungs)))
        return sum(w * n for w, n in zip(lengths, weights, strict=True)) / sum(weights)

    def rungs(self, max_steps: int, eval_every: int) -> list[int]:
        """The steps where trials are compared: grace·η^k below max_steps, on the eval grid (bracket
        0's; later brackets compare at a subset of them)."""
        grace = self.resolved(max_steps, eval_every).grace_steps or 1
        out, step = [], float(grace)
        while step < max_steps:
            out.append(_round_up(step, eval_every))
            step *= self.reduction_factor
        return sorted(set(out))

    def describe(self, max_steps: int, eval_every: int) -> str:
        rungs = ", ".join(str(r) for r in self.rungs(max_steps, eval_every))
        rungs = f"rungs at steps {rungs}" if rungs else "no rung (every trial runs to the end)"
        resolved = self.resolved(max_steps, eval_every)
        brackets = resolved.brackets or 1
        return (
            f"ASHA grace {resolved.grace_steps} steps, reduction factor "
            f"{self.reduction_factor}, {rungs} of {max_steps} (eval every {eval_every})"
            + (f", {brackets} brackets (asynchronous Hyperband)" if brackets > 1 else "")
        )


def _round_up(value: float, multiple: int) -> int:
    return max(multiple, math.ceil(value / multiple) * multiple)


def _describe(error: Mapping[str, Any]) -> str:
    field = ".".join(str(p) for p in error.get("loc", ())) or "early_stopping"
    ranges = {
        "grace_steps": "an integer >= 1 (at most max_steps)",
        "reduction_factor": "an integer from 2 to 16",
        "brackets": "an integer from 1 to 8",
    }
    allowed = ranges.get(field, "no such field; allowed: grace_steps, reduction_factor, brackets")
    return f"{field}: {error.get('msg')} (allowed: {allowed}), got {error.get('input')!r}"


def stores_policy(user_attrs: Mapping[str, Any]) -> bool:
    """Whether a study stores a policy that `study_policy` reads: a sweep spec (every study
    `tuner.sweeps.study.create` makes) or the `early_stopping` attribute of an older one."""
    return isinstance(study_attrs.SPEC.of(user_attrs), Mapping) or study_attrs.EARLY_STOPPING in user_attrs


def study_policy(user_attrs: Mapping[str, Any]) -> EarlyStopping:
    """The policy stored with a study: the fields of its sweep spec (`tuner.spec`, the `spec`
    attribute), else the `early_stopping` attribute of a study written before the spec existed,
    else the defaults."""
    spec = study_attrs.SPEC.of(user_attrs)
    if isinstance(spec, Mapping):
        return EarlyStopping.parse({k: spec[k] for k in EarlyStopping.model_fields if k in spec})
    return EarlyStopping.parse(study_attrs.EARLY_STOPPING.of(user_attrs))
