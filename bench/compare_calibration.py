"""Calibration of `rnntune compare`'s statistics on studies drawn from known distributions.

Prints (docs/compare.md):
* how often the 90% band of the expected best value (Dodge et al. 2019) covers the true expected
  minimum of n draws, for several n against the study's N trials;
* how often the verdict's test calls two studies of one distribution separable (its false
  separation rate; nominal 5%) and how often it separates a real shift (its power), at n = N and
  at n = N/10.

Trial values are drawn as 4 + scale × gamma(2) (right-skewed, as validation losses of tuning trials
are: many poor trials, few good ones) or normal. Seeded: the same figures every run.

    .venv/bin/python -m bench.compare_calibration [--sims 200]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import integrate, stats

from tuner.analysis import expected_best as eb

DISTRIBUTIONS = {"gamma(2)": stats.gamma(2.0, scale=0.05), "normal": stats.norm(scale=0.05)}


def true_expected_min(n: int, dist) -> float:
    """E[min of n iid draws] = ∫ x n f(x) (1 − F(x))^(n−1) dx."""
    low, high = dist.ppf(1e-12), dist.ppf(1 - 1e-12)
    return integrate.quad(lambda x: x * n * dist.pdf(x) * dist.sf(x) ** (n - 1), low, high, limit=200)[0]


def coverage(dist, trials: int, budgets: list[int], sims: int) -> np.ndarray:
    truth = np.array([true_expected_min(n, dist) for n in budgets])
    rng = np.random.default_rng(1)
    hits = np.zeros(len(budgets))
    for sim in range(sims):
        curve = eb.curve_with_band(dist.rvs(size=trials, random_state=rng), True, budgets=budgets, seed=sim)
        hits += (np.array(curve.low) <= truth) & (truth <= np.array(curve.high))
    return hits / sims


def separation_rate(dist, trials: int, n: int, shift: float, sims: int) -> float:
    rng = np.random.default_rng(2)
    separated = 0
    for sim in range(sims):
        a = dist.rvs(size=trials, random_state=rng)
        b = dist.rvs(size=trials, random_state=rng) + shift
        separated += eb.difference(a, b, n, n, True, seed=sim).separable
    return separated / sims


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=200, help="simulated studies (or pairs) per cell")
    args = parser.parse_args()
    print(f"{args.sims} simulations per cell, {eb.REPLICATES} bootstrap replicates each")
    print("\ncoverage of the 90% band of E[best of n] (N trials per study)")
    for name, dist in DISTRIBUTIONS.items():
        for trials in (20, 50, 100):
            budgets = sorted({1, 3, max(1, trials // 10), trials // 2, trials})
            cells = coverage(dist, trials, budgets, args.sims)
            print(
                f"  {name:8s} N={trials:3d}  " + "  ".join(f"n={n}: {c:.2f}" for n, c in zip(budgets, cells))
            )
    print("\nthe verdict's test: share of pairs called separable (nominal false rate 5%)")
    for name, dist in DISTRIBUTIONS.items():
        for trials in (20, 50):
            for n in (max(1, trials // 10), trials):
                false = separation_rate(dist, trials, n, 0.0, args.sims)
                power = separation_rate(dist, trials, n, float(dist.std()), args.sims)
                print(
                    f"  {name:8s} N={trials:3d} n={n:3d}  same distribution: {false:.3f}  "
                    f"shifted by one sd: {power:.3f}"
                )


if __name__ == "__main__":
    main()
