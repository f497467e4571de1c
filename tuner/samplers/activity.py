"""Which parameters a candidate activates, learnt from the trials, so the acquisition sees it too.

Why: the GP fits an inactive parameter at its imputed value (`tuner.samplers.inactive`), but the
acquisition optimiser scores candidates with every parameter inside [0, 1]. A candidate with
`mogrifier_rounds = 0` and rank 0.4 would then look unexplored (no trial has rank 0.4 with 0
rounds), be chosen, run with rank inactive, be stored at the imputed rank, and look unexplored
again: the sampler repeats itself. Define-by-run spaces do not declare their conditions, so they
are read off the trials: parameter Q depends on a discrete parameter P (categorical, or integer
with at most `MAX_CHOICES` values) when the P values of trials with Q and of trials without Q
never meet, and each P value seen without Q was seen at least twice (one coincidence is not a
rule). A candidate whose P value is one of those seen without Q is scored with Q at its imputed
value, as its trial will be stored. Every rule found is applied (Q inactive if any says so), so a
parameter under two conditions (`cell` and `mogrifier_rounds`) gets both.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution

from tuner.samplers.inactive import INACTIVE_AT

MAX_CHOICES = 16


@dataclass(frozen=True)
class Rule:
    """Q (column `target`) is inactive when column `parent` takes one of `values` (normalised)."""

    target: int
    parent: int
    values: tuple[float, ...]
    inactive_at: float


def learn(space: dict[str, BaseDistribution], normalized: np.ndarray, active: list[set[str]]) -> list[Rule]:
    """Rules from the fitted trials: `normalized` rows (imputed), `active` names per row."""
    names = list(space)
    rules = []
    for q, q_name in enumerate(names):
        has_q = np.array([q_name in a for a in active], dtype=bool)
        if has_q.all() or not has_q.any():
            continue
        for p, p_name in enumerate(names):
            if p == q or not _discrete(space[p_name]):
                continue
            with_q = set(np.round(normalized[has_q, p], 9))
            without = Counter(np.round(normalized[~has_q, p], 9))
            if with_q.isdisjoint(without) and min(without.values()) >= 2:
                at = -1.0 if isinstance(space[q_name], CategoricalDistribution) else INACTIVE_AT
                rules.append(Rule(q, p, tuple(sorted(without)), at))
    return rules


def _discrete(distribution: BaseDistribution) -> bool:
    if isinstance(distribution, CategoricalDistribution):
        return len(distribution.choices) <= MAX_CHOICES
    if isinstance(distribution, IntDistribution):
        return (distribution.high - distribution.low) // distribution.step + 1 <= MAX_CHOICES
    return False


def masked(eval_acqf: Any, rules: list[Rule]) -> Any:
    """`eval_acqf` (Optuna's acquisition on a torch tensor of normalised candidates) scoring each
    candidate with the parameters the rules make inactive at their imputed values."""
    if not rules:
        return eval_acqf

    import torch  # Optuna's GP already imported it

    def evaluate(x: torch.Tensor) -> torch.Tensor:
        out = x
        for rule in rules:
            parent = x[..., rule.parent]
            hit = torch.zeros_like(parent, dtype=torch.bool)
            for v in rule.values:
                hit = hit | (torch.abs(parent - v) < 1e-6)
            column = torch.where(hit, torch.full_like(parent, rule.inactive_at), out[..., rule.target])
            out = torch.cat([out[..., : rule.target], column.unsqueeze(-1), out[..., rule.target + 1 :]], -1)
        return eval_acqf(out)

    return evaluate
