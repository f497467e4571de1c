"""bench.search_efficiency's head-to-head comparison, on plain regrets (no BBOB function runs)."""

from __future__ import annotations

import math
from types import ModuleType

import pytest


def test_head_to_head_counts_lower_and_higher_regrets_on_common_runs_only(
    search_efficiency: ModuleType,
) -> None:
    own = {(1, False, 0): 0.01, (1, False, 1): 0.4, (8, True, 0): 0.2, (8, True, 5): 9.0}
    other = {(1, False, 0): 0.1, (1, False, 1): 0.2, (8, True, 0): 0.2, (10, False, 0): 1.0}
    h = search_efficiency.head_to_head(own, other)
    assert (h.runs, h.lower, h.higher) == (3, 1, 1)
    assert h.ratio == pytest.approx((0.1 * 2.0 * 1.0) ** (1 / 3))  # geometric mean of 0.1, 2 and 1
    assert math.isnan(h.p)  # fewer than 6 pairs: no test


def test_head_to_head_p_is_small_only_when_one_side_is_consistently_lower(
    search_efficiency: ModuleType,
) -> None:
    other = {(f, False, s): 0.1 * (s + 1) for f in (1, 8) for s in range(10)}
    better = search_efficiency.head_to_head({k: v / 3 for k, v in other.items()}, other)
    assert (better.lower, better.higher) == (20, 0)
    assert better.ratio == pytest.approx(1 / 3)
    assert better.p < 0.001
    mixed = {k: v * (3 if k[2] % 2 else 1 / 3) for k, v in other.items()}
    even = search_efficiency.head_to_head(mixed, other)
    assert (even.lower, even.higher) == (10, 10)
    assert even.ratio == pytest.approx(1.0)
    assert even.p > 0.5


def test_a_zero_regret_counts_as_lower_than_any_positive_one(search_efficiency: ModuleType) -> None:
    h = search_efficiency.head_to_head({(1, False, 0): 0.0}, {(1, False, 0): 1e-6})
    assert (h.lower, h.higher) == (1, 0)
    assert h.ratio < 1e-5
