"""Dominance, non-dominated sorting, crowding and hypervolume (`tuner.objectives.pareto`) on plain
values, then against brute force and Optuna's own hypervolume on random points (fixed seeds)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tuner.objectives.pareto import crowding, dominates, front_ranks, hypervolume, non_dominated


def test_dominance_needs_no_worse_everywhere_and_better_somewhere() -> None:
    assert dominates([1, 2], [2, 2])
    assert dominates([1, 1, 1], [1, 1, 2])
    assert not dominates([1, 2], [1, 2])  # equal points do not dominate each other
    assert not dominates([1, 3], [2, 2])  # a trade-off
    assert not dominates([2, 2], [1, 2])


def test_front_keeps_duplicates_and_drops_the_dominated() -> None:
    points = [[1, 5], [2, 2], [2, 2], [3, 3], [5, 1], [6, 6]]
    assert non_dominated(points) == [0, 1, 2, 4]
    assert non_dominated([]) == []


def test_ranks_peel_fronts_in_order() -> None:
    points = [[1, 5], [2, 2], [3, 3], [5, 1], [6, 6], [4, 4]]
    assert front_ranks(points) == [0, 0, 1, 0, 3, 2]
    assert front_ranks([[0.3]]) == [0]


def test_crowding_gives_extremes_infinity_and_inner_points_their_gaps() -> None:
    distances = crowding([[0, 4], [1, 2], [2, 1], [4, 0]])
    assert distances[0] == distances[3] == np.inf
    assert distances[1] == pytest.approx(2 / 4 + 3 / 4)
    assert distances[2] == pytest.approx(3 / 4 + 2 / 4)


def test_hypervolume_of_plain_fronts() -> None:
    assert hypervolume([[1, 1]], [3, 3]) == pytest.approx(4)
    # Two boxes of 2x1 and 1x2 overlapping in 1x1.
    assert hypervolume([[1, 2], [2, 1]], [3, 3]) == pytest.approx(3)
    assert hypervolume([[1, 2], [2, 1], [2.5, 2.5]], [3, 3]) == pytest.approx(3)  # dominated: nothing
    assert hypervolume([[1, 1, 1]], [2, 3, 4]) == pytest.approx(1 * 2 * 3)
    # Three 2x1x1 boxes: inclusion-exclusion 3·2 − 3·1 + 1.
    assert hypervolume([[0, 1, 1], [1, 0, 1], [1, 1, 0]], [2, 2, 2]) == pytest.approx(4)
    # A point on or beyond the reference in one objective contributes nothing.
    assert hypervolume([[3, 0], [4, -1]], [3, 3]) == 0.0
    assert hypervolume([], [1, 1]) == 0.0


def _brute_front(p: np.ndarray) -> list[int]:
    return [i for i in range(len(p)) if not any(dominates(p[j], p[i]) for j in range(len(p)))]


def _grid_volume(p: np.ndarray, ref: np.ndarray) -> float:
    """Exact volume by the cells of the grid every point's coordinates span."""
    axes = [np.unique(np.append(p[:, k], ref[k])) for k in range(p.shape[1])]
    total = 0.0
    for cell in itertools.product(*(range(len(a) - 1) for a in axes)):
        low = np.array([axes[k][c] for k, c in enumerate(cell)])
        if np.any(np.all(p <= low, axis=1)):
            total += float(np.prod([axes[k][c + 1] - axes[k][c] for k, c in enumerate(cell)]))
    return total


@pytest.mark.parametrize("dims", [2, 3, 4])
def test_against_brute_force_on_random_points(dims: int) -> None:
    rng = np.random.default_rng(dims)
    for _ in range(5):
        p = rng.integers(0, 6, size=(9, dims)).astype(float)  # ties and duplicates on purpose
        ref = np.full(dims, 6.0)
        assert non_dominated(p) == _brute_front(p)
        ranks = np.array(front_ranks(p))
        for i, j in itertools.permutations(range(len(p)), 2):
            if dominates(p[i], p[j]):
                assert ranks[i] < ranks[j]
        for r in range(ranks.max() + 1):  # each front is the front of what is left
            left = np.flatnonzero(ranks >= r)
            assert sorted(left[_brute_front(p[left])]) == sorted(np.flatnonzero(ranks == r))
        assert hypervolume(p, ref) == pytest.approx(_grid_volume(p, ref))


@pytest.mark.parametrize("dims", [2, 3, 5])
def test_hypervolume_matches_optunas(dims: int) -> None:
    wfg = pytest.importorskip("optuna._hypervolume")  # private: an oracle in this test only
    rng = np.random.default_rng(100 + dims)
    for n in (1, 7, 40):
        p = rng.random((n, dims))
        p = p / np.linalg.norm(p, axis=1, keepdims=True)  # near a sphere: most points on the front
        ref = np.full(dims, 1.1)
        assert hypervolume(p, ref) == pytest.approx(wfg.compute_hypervolume(p, ref), rel=1e-9)
