"""bench/multifidelity.py's paired test: what it calls "worse beyond the seed noise"."""

from __future__ import annotations

import math

import numpy as np


def test_a_method_behind_on_every_seed_is_worse(multifidelity):
    reference = {s: 0.1 + 0.01 * s for s in range(20)}
    own = {s: v + 0.05 for s, v in reference.items()}
    result = multifidelity.paired(own, reference)
    assert (result.n, result.better, result.worse_seeds) == (20, 0, 20)
    assert result.worse and result.p < 0.001
    assert "worse" in result.cell()


def test_noise_around_the_reference_is_not_worse(multifidelity):
    rng = np.random.default_rng(0)
    reference = {s: float(rng.uniform(0, 0.1)) for s in range(40)}
    own = {s: v + float(rng.normal(0, 0.02)) for s, v in reference.items()}
    result = multifidelity.paired(own, reference)
    assert not result.worse and result.p > 0.05
    assert "worse" not in result.cell()


def test_better_is_never_worse_and_only_common_seeds_pair(multifidelity):
    reference = {s: 0.5 for s in range(30)}
    own = {s: 0.1 for s in range(10, 40)}  # seeds 10..29 in common
    result = multifidelity.paired(own, reference)
    assert (result.n, result.better) == (20, 20)
    assert result.p < 0.05 and not result.worse


def test_too_few_seeds_or_no_difference_gives_no_p(multifidelity):
    assert math.isnan(multifidelity.paired({0: 1.0, 1: 2.0}, {0: 1.5, 1: 1.0}).p)
    same = {s: 0.2 for s in range(10)}
    result = multifidelity.paired(same, dict(same))
    assert math.isnan(result.p) and not result.worse and result.cell() == "n=10"
