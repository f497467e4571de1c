"""Expected validation performance (Dodge et al. 2019, "Show Your Work"): the expected best value of
n trials drawn from a study's COMPLETE trials, with bootstrap bands and a bootstrap test between two
studies.

A study's best value alone says little about how two models compare: it depends on how many trials
each got, and a tuner that keeps the best of many noisy runs keeps the luckiest one (thesis
Appendix 2.B: reruns of the best LSTM averaged 0.7 perplexity points worse than its tuning run).
Dodge et al. (2019, §3) instead report, for every budget n, the expected maximum of n draws with
replacement from the empirical distribution of the trials' values. With the N values sorted
v_(1) <= ... <= v_(N), the best of n draws is v_(i) with probability (i/N)^n - ((i-1)/N)^n when
maximising (the order statistics of sampling with replacement), so

    E[max of n] = sum_i v_(i) ((i/N)^n - ((i-1)/N)^n),

and mirrored, with ((N-i+1)/N)^n - ((N-i)/N)^n, for the expected minimum (rnntune minimises the
validation loss). `expected_best` computes it exactly for a grid of n as one matrix product.

The bands resample the trials (fixed seed, so the same study always gives the same band): each
replicate draws N values with replacement and recomputes the curve; the band is the basic (reverse
percentile) bootstrap interval, [2c - q_high, 2c - q_low] for the curve c and the replicates'
quantiles q. Near n = N the plug-in curve is biased towards the sample's best value (the sample has
no tail beyond it) and the replicates are biased further the same way; the basic interval corrects
for that bias where the plain percentile interval doubles it. Measured (docs/compare.md): coverage
0.8-0.9 (stated: 0.9) for n up to about N/10, falling to 0.5-0.75 at n = N
(bench/compare_calibration.py).

The test between two studies (`difference`) is the percentile interval of the bootstrap
differences: both curves carry the same kind of bias, which cancels in the difference, and there
the percentile interval separated draws of one distribution less often than the basic one. It is
still too narrow at n = N: pairs drawn from one distribution were called separable 10-14% of the
time at n = N and 5-9% at n = N/10, for a nominal 5% (bench/compare_calibration.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

REPLICATES = 1000
BAND = 0.90  # the curves' bands
TEST_CONFIDENCE = 0.95  # the verdict's interval on the difference
SEED = 0
# Budgets drawn: every n up to this, then about as many more log-spaced up to the trial count.
DENSE_UP_TO = 50
# Replicates sorted and multiplied at once: bounds the memory of a 10,000-trial study to ~40 MB.
CHUNK_CELLS = 5_000_000


def budget_grid(n_values: int) -> np.ndarray:
    """The budgets n the curves are drawn at: 1..50, then log-spaced up to `n_values`."""
    dense = np.arange(1, min(n_values, DENSE_UP_TO) + 1)
    if n_values <= DENSE_UP_TO:
        return dense
    sparse = np.geomspace(DENSE_UP_TO, n_values, DENSE_UP_TO).round().astype(int)
    return np.unique(np.concatenate([dense, sparse, [n_values]]))


def order_weights(n_values: int, budgets: Sequence[int] | np.ndarray, minimize: bool) -> np.ndarray:
    """W with W[i, j] the probability that the best of budgets[j] draws with replacement is the
    i-th smallest of `n_values` values (ties counted as distinct draws; the sum is unaffected)."""
    n = np.asarray(budgets, dtype=float)[None, :]
    rank = np.arange(1, n_values + 1, dtype=float)[:, None]  # ascending ranks 1..N
    if minimize:
        at_least, above = (n_values - rank + 1) / n_values, (n_values - rank) / n_values
        return at_least**n - above**n
    return (rank / n_values) ** n - ((rank - 1) / n_values) ** n


def expected_best(
    values: Sequence[float] | np.ndarray, budgets: Sequence[int] | np.ndarray, minimize: bool
) -> np.ndarray:
    """E[best of n draws with replacement from `values`] for each n in `budgets` (exact)."""
    ordered = np.sort(np.asarray(values, dtype=float))
    return ordered @ order_weights(len(ordered), budgets, minimize)


def _replicate_curves(
    values: np.ndarray,
    budgets: Sequence[int] | np.ndarray,
    minimize: bool,
    replicates: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """The curve of each bootstrap replicate: shape (replicates, len(budgets))."""
    ordered = np.sort(values)
    n_values = len(ordered)
    weights = order_weights(n_values, budgets, minimize)
    chunk = max(1, CHUNK_CELLS // max(n_values, 1))
    out = np.empty((replicates, len(weights[0])))
    for start in range(0, replicates, chunk):
        stop = min(replicates, start + chunk)
        # Sorted draws of indices into the sorted values are the replicate's sorted values.
        picks = np.sort(rng.integers(0, n_values, size=(stop - start, n_values)), axis=1)
        out[start:stop] = ordered[picks] @ weights
    return out


@dataclass(frozen=True)
class Curve:
    """Expected best value against budget n, with its basic bootstrap band."""

    budgets: tuple[int, ...]
    expected: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]


@dataclass(frozen=True)
class Difference:
    """E_a[best of n_a] - E_b[best of n_b] with its bootstrap standard error and interval."""

    n_a: int
    n_b: int
    estimate: float
    se: float
    low: float
    high: float
    confidence: float

    @property
    def separable(self) -> bool:
        """The interval excludes 0."""
        return self.low > 0 or self.high < 0


@dataclass(frozen=True, eq=False)
class Bootstrapped:
    """A study's expected-best curve on `budgets` and the same curve in each bootstrap replicate
    (shape: replicates × budgets). One set of replicates serves the band and every test the study
    is in, so a comparison resamples each study once."""

    budgets: tuple[int, ...]
    expected: np.ndarray
    replicates: np.ndarray

    @staticmethod
    def of(
        values: Sequence[float] | np.ndarray,
        minimize: bool,
        *,
        budgets: Sequence[int] | np.ndarray | None = None,
        replicates: int = REPLICATES,
        seed: int | Sequence[int] = SEED,
    ) -> Bootstrapped:
        """Resample `values` (default budgets: `budget_grid`); the same seed gives the same replicates."""
        data = np.asarray(values, dtype=float)
        grid = budget_grid(len(data)) if budgets is None else np.asarray(budgets, dtype=int)
        reps = _replicate_curves(data, grid, minimize, replicates, np.random.default_rng(seed))
        return Bootstrapped(tuple(int(n) for n in grid), expected_best(data, grid, minimize), reps)

    def curve(self, band: float = BAND) -> Curve:
        """The curve with its basic bootstrap band at `band`."""
        tail = 100 * (1 - band) / 2
        q_low, q_high = np.percentile(self.replicates, [tail, 100 - tail], axis=0)
        return Curve(
            self.budgets,
            tuple(float(v) for v in self.expected),
            tuple(float(v) for v in 2 * self.expected - q_high),
            tuple(float(v) for v in 2 * self.expected - q_low),
        )


def compare_at(
    a: Bootstrapped, b: Bootstrapped, n_a: int, n_b: int, confidence: float = TEST_CONFIDENCE
) -> Difference:
    """The percentile interval at `confidence` of the replicates' E_a[best of n_a] − E_b[best of
    n_b] (a and b resampled independently); both budgets must be on their curves' budgets."""
    i, j = a.budgets.index(n_a), b.budgets.index(n_b)
    diffs = a.replicates[:, i] - b.replicates[:, j]
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(diffs, [tail, 100 - tail])
    estimate = float(a.expected[i] - b.expected[j])
    return Difference(n_a, n_b, estimate, float(diffs.std(ddof=1)), float(low), float(high), confidence)


def curve_with_band(
    values: Sequence[float] | np.ndarray,
    minimize: bool,
    *,
    budgets: Sequence[int] | None = None,
    replicates: int = REPLICATES,
    band: float = BAND,
    seed: int | Sequence[int] = SEED,
) -> Curve:
    """The expected-best curve over `budgets` (default `budget_grid`) and its `band` bootstrap band."""
    return Bootstrapped.of(values, minimize, budgets=budgets, replicates=replicates, seed=seed).curve(band)


def difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    n_a: int,
    n_b: int,
    minimize: bool,
    *,
    replicates: int = REPLICATES,
    confidence: float = TEST_CONFIDENCE,
    seed: int = SEED,
) -> Difference:
    """Bootstrap of the difference of expected best values, each study's trials resampled on its
    own (independent streams from `seed`): the percentile interval at `confidence`."""
    boot_a = Bootstrapped.of(a, minimize, budgets=[n_a], replicates=replicates, seed=[seed, 1])
    boot_b = Bootstrapped.of(b, minimize, budgets=[n_b], replicates=replicates, seed=[seed, 2])
    return compare_at(boot_a, boot_b, n_a, n_b, confidence)
