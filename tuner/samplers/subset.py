"""Which observations the GP fits once a study is large: the best, the most recent, a random rest.

Why: an exact GP costs O(n³) to fit and O(n²) per acquisition evaluation, so a study of thousands
of trials made every suggestion slower than the trials it schedules (measured with
bench/orchestration_overhead.py: 2.9 s per suggestion at 1,000 trials, 17 s at 2,000). A subset of
`cap` points keeps the cost flat. Which points: the `best` ones (the incumbent and the region the
acquisition refines must stay in the model), the `recent` ones (where the sweep is now, and the
RUNNING trials' reports), and a uniform random sample of the rest (the global shape, so explored
regions stay explored). Below `cap` every observation is kept, so small studies fit exactly as
before. The random draw is seeded by the caller (the sampler's seed and the study's size), so a
seeded sweep is reproducible and the draw changes as the study grows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Subset:
    """Fit at most `cap` observations: the `best` by target, the `recent` by trial number, and a
    random sample of the others."""

    cap: int = 200
    best: int = 50
    recent: int = 50

    def __post_init__(self) -> None:
        if self.cap < 1 or self.best < 0 or self.recent < 0 or self.best + self.recent > self.cap:
            raise ValueError(f"Subset needs cap >= 1 and 0 <= best + recent <= cap, got {self}")

    def select(
        self, numbers: np.ndarray, minimised: np.ndarray, seed: int | None, always: np.ndarray | None = None
    ) -> np.ndarray:
        """Positions of the observations to fit, ascending. `numbers` are their trials' numbers
        (larger is more recent), `minimised` their targets (smaller is better, NaN worst);
        `always` positions kept whatever the cap (several objectives: the Pareto front, which the
        improvement is measured from)."""
        n = len(numbers)
        if n <= self.cap:
            return np.arange(n)
        keep = np.zeros(n, dtype=bool)
        if always is not None:
            keep[always] = True
        by_value = np.argsort(np.where(np.isnan(minimised), np.inf, minimised), kind="stable")
        keep[by_value[: self.best]] = True
        by_recency = np.argsort(-np.asarray(numbers), kind="stable")
        keep[by_recency[: self.recent]] = True
        rest = np.flatnonzero(~keep)
        rng = np.random.default_rng(seed)
        keep[rng.choice(rest, size=max(0, self.cap - int(keep.sum())), replace=False)] = True
        return np.flatnonzero(keep)
