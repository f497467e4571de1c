"""Dominance, non-dominated sorting, crowding and exact hypervolume over plain vectors.

Every function takes MINIMISATION vectors (one row per point, one column per objective); a caller
with a maximised measure flips its sign first. They are pure numpy and hold no state, so the
scheduler (`tuner.policies.pareto_rungs`), the samplers, the API's front and the benchmarks share
one definition of "better" (Deb et al. 2002 for the sorting and crowding; While et al. 2012, WFG,
for the hypervolume).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Points = Sequence[Sequence[float]] | np.ndarray


def _array(points: Points) -> np.ndarray:
    out = np.asarray(points, dtype=float)
    if out.ndim == 1:  # one objective, or no points at all
        out = out.reshape(-1, 1) if out.size else out.reshape(0, 0)
    return out


def dominates(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> bool:
    """Whether `a` Pareto-dominates `b`: no worse in every objective and better in one."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return bool(np.all(x <= y) and np.any(x < y))


def _dominance(points: np.ndarray) -> np.ndarray:
    """`d[i, j]`: whether point i dominates point j."""
    le = np.all(points[:, None, :] <= points[None, :, :], axis=-1)
    lt = np.any(points[:, None, :] < points[None, :, :], axis=-1)
    return le & lt


def non_dominated(points: Points) -> list[int]:
    """Indices of the points no other point dominates (the front), in input order; equal points
    are both on it, since neither dominates the other."""
    p = _array(points)
    if len(p) == 0:
        return []
    return [int(i) for i in np.flatnonzero(~_dominance(p).any(axis=0))]


def front_ranks(points: Points) -> list[int]:
    """Non-dominated sorting: 0 for the front, 1 for the front once it is removed, and so on."""
    p = _array(points)
    n = len(p)
    if n == 0:
        return []
    dom = _dominance(p)
    dominated_by = dom.sum(axis=0)  # how many points dominate each one
    ranks = np.full(n, -1)
    current = np.flatnonzero(dominated_by == 0)
    rank = 0
    while current.size:
        ranks[current] = rank
        dominated_by = dominated_by - dom[current].sum(axis=0)
        dominated_by[ranks >= 0] = -1
        current = np.flatnonzero(dominated_by == 0)
        rank += 1
    return [int(r) for r in ranks]


def crowding(points: Points) -> list[float]:
    """NSGA-II's crowding distance of each point among `points` (usually one front): the sum over
    objectives of the gap between its neighbours, scaled by that objective's range; the extremes
    of each objective get inf, so a larger value means a lonelier point, worth keeping."""
    p = _array(points)
    n = len(p)
    if n == 0:
        return []
    dist = np.zeros(n)
    for column in p.T:
        order = np.argsort(column, kind="stable")
        span = column[order[-1]] - column[order[0]]
        dist[order[0]] = dist[order[-1]] = np.inf
        if n > 2 and span > 0:
            dist[order[1:-1]] += (column[order[2:]] - column[order[:-2]]) / span
    return [float(d) for d in dist]


def hypervolume(points: Points, reference: Sequence[float] | np.ndarray) -> float:
    """The exact volume dominated by `points` and bounded by `reference`; points that do not
    strictly dominate the reference in every objective add nothing. A sweep in 2-D, WFG's
    exclusive-volume recursion above (While et al. 2012), which is exact in any dimension and fast
    enough for fronts of a few hundred points in 3-5 objectives."""
    ref = np.asarray(reference, dtype=float)
    p = _array(points)
    if len(p) == 0:
        return 0.0
    if p.shape[1] != ref.shape[0]:
        raise ValueError(f"points have {p.shape[1]} objectives, the reference {ref.shape[0]}")
    p = p[np.all(p < ref, axis=1)]
    if len(p) == 0:
        return 0.0
    return _wfg(_front_sorted(p), ref)


def _front_sorted(p: np.ndarray) -> np.ndarray:
    """The distinct non-dominated rows of `p`, sorted by the first objective."""
    p = np.unique(p, axis=0)  # lexicographic, so sorted by the first objective
    return p[~_dominance(p).any(axis=0)]


def _wfg(front: np.ndarray, ref: np.ndarray) -> float:
    if front.shape[1] == 1:
        return float(ref[0] - front[:, 0].min())
    if front.shape[1] == 2:
        return _sweep_2d(front, ref)
    total = 0.0
    for i, point in enumerate(front):
        # Exclusive volume of `point` against the points after it, limited to its box.
        limited = np.maximum(front[i + 1 :], point)
        rest = _wfg(_front_sorted(limited), ref) if len(limited) else 0.0
        total += float(np.prod(ref - point)) - rest
    return total


def _sweep_2d(front: np.ndarray, ref: np.ndarray) -> float:
    """Area of a 2-D front sorted by the first objective (so the second decreases)."""
    x, y = front[:, 0], front[:, 1]
    widths = np.append(x[1:], ref[0]) - x
    return float(np.sum(widths * (ref[1] - y)))
