"""Two objectives: a GP per objective and expected hypervolume improvement over them.

Why: with two objectives a GP per objective and q-logEHVI (Daulton et al. 2020; in closed form
when no trial is in flight, `ExactLogEHVI`) put each suggestion where the front grows most;
ParEGO's one GP of a scalarised value with kinks (`tuner.samplers.parego`) trailed it at full
fidelity in bench/multi_objective.py. Around Optuna's
acquisition, rnntune keeps what its one-objective GP does: the first objective's GP is the
sampler's fidelity model (early-stopped trials at the step they reached, candidates scored at the
full length), every other objective's GP fits each trial that recorded it, PRUNED ones included
(a sweep records its measures as user attrs named by `study.metric_names`), and the front the
improvement is measured from is the GPs' posterior means at the COMPLETE trials, not their noisy
values (a lucky seed does not raise the bar; the plug-in form of Daulton et al. 2021's noisy EHVI).

Used when `applies`: two objectives, no constraints (ParEGO's constrained q-logEI handles those),
and enough COMPLETE trials for a front; otherwise the sampler scalarises (ParEGO), which also
learns from early-stopped trials before any has finished. With three or more objectives ParEGO
ranked first (DTLZ2) and the box decomposition EHVI needs grows with the front.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from optuna.trial import FrozenTrial, TrialState

from tuner.upstream.optuna_private import (
    ListConditionalGPRegressor,
    acqf,
    box_bounds,
    is_pareto_front,
    reference_point,
    standard_logei,
    standardize_values,
)

N_OBJECTIVES = 2  # the studies EHVI is used for (module docstring)
N_WARM_STARTS = 5  # front points the acquisition optimiser starts from, as Optuna's GPSampler
STABILIZING_NOISE = 1e-12  # added to each posterior variance, as in Optuna's LogEHVI
MIN_SIDE = 1e-12  # a box side's and an improvement's floor, as Optuna's q-logEHVI (finite gradients)


def applies(n_objectives: int, trials: Sequence[FrozenTrial], enough: int) -> bool:
    """Whether a suggestion in a study with `n_objectives` uses EHVI: two objectives, no trial with
    constraints, and at least `enough` (the sampler's `n_startup_trials`) COMPLETE trials."""
    if n_objectives != N_OBJECTIVES or any(t.constraints for t in trials):
        return False
    complete = sum(t.state == TrialState.COMPLETE and t.values is not None for t in trials)
    return complete >= max(enough, 1)


def first_objective(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """Copies of `trials` with the first objective as their one value (COMPLETE ones; the others
    keep none), so the sampler's fidelity model reads them as a one-objective study's: rnntune's
    curves are of the first objective, `val_loss`."""
    out = []
    for t in trials:
        proxy = copy.copy(t)  # the stored trial keeps its values: only the copy's are replaced
        proxy.values = [t.values[0]] if t.state == TrialState.COMPLETE and t.values is not None else None
        out.append(proxy)
    return out


def measured(
    trials: Sequence[FrozenTrial], names: Sequence[str], index: int
) -> list[tuple[FrozenTrial, float]]:
    """The trials that know objective `index` and its value: a COMPLETE trial's values, another
    trial's user attr named `names[index]` when the study names its metrics."""
    out = []
    for t in trials:
        if t.state == TrialState.COMPLETE and t.values is not None:
            out.append((t, float(t.values[index])))
            continue
        value = t.user_attrs.get(names[index]) if len(names) > index else None
        if isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value):
            out.append((t, float(value)))
    return out


def front_positions(
    trials: Sequence[FrozenTrial], stored: Sequence[FrozenTrial], signs: np.ndarray, limit: int
) -> np.ndarray:
    """Positions in `trials` (the first objective's observations) of the COMPLETE trials on the
    Pareto front of every objective, read from the `stored` trials of the same numbers: a subset
    of a large study keeps them (tuner.samplers.subset). A front of more than `limit` points
    (objectives that hardly conflict put most trials on it) keeps `limit` of them evenly spaced
    along the first objective, so the fit's cost stays bounded and the front's extent is kept."""
    values = {t.number: t.values for t in stored if t.state == TrialState.COMPLETE and t.values is not None}
    positions = [i for i, t in enumerate(trials) if t.number in values and t.state == TrialState.COMPLETE]
    if not positions:
        return np.array([], dtype=int)
    signed = np.array([values[trials[i].number] for i in positions], dtype=float) * np.asarray(signs)
    on_front = is_pareto_front(signed, assume_unique_lexsorted=False)
    front = np.asarray(positions)[on_front]
    if len(front) > limit:
        ordered = front[np.argsort(signed[on_front][:, 0], kind="stable")]
        front = np.sort(ordered[np.linspace(0, len(ordered) - 1, limit).round().astype(int)])
    return front


def targets(values: Sequence[float], sign: float) -> np.ndarray:
    """Standardized GP targets, larger is better (as Optuna's GP fits them), of one objective's
    `values`. Not warped: the other objectives are measures of the configuration (size, speed,
    memory), smooth and without the diverged runs the sampler's warping of the loss is for."""
    return standardize_values(-sign * np.asarray(values, dtype=float).reshape(-1, 1))[0][:, 0]


def front_means(gprs: Sequence[Any], x: np.ndarray) -> Any:
    """The GPs' posterior means at the normalised points `x` (the COMPLETE trials, at the full
    length when the step is an input), one column per objective: the denoised front."""
    import torch

    points = torch.from_numpy(x)
    with torch.no_grad():
        return torch.stack([g.posterior(points)[0] for g in gprs], -1).double()


class ExactLogEHVI(acqf.BaseAcquisitionFunc):
    """log EHVI of one candidate in closed form, over independent per-objective GPs: the suggestion
    made with no trial in flight.

    Why hand-written: Optuna's LogEHVI estimates the same expectation from 128 QMC samples of every
    box. The GPs are independent, so the improvement inside each box is a product of one
    expectation per objective, each exact (Yang et al. 2019, "Efficient computation of expected
    hypervolume improvement using box decomposition algorithms", eq. 8-10). With trials in flight
    `acquisition` keeps Optuna's q-logEHVI: believing them at their means (Kriging believer), the
    cheaper way, found smaller fronts in bench/multi_objective.py (docs/samplers.md).
    """

    def __init__(self, gprs: Sequence[Any], space: Any, front: Any) -> None:
        self._gprs = list(gprs)
        self._lower, self._width = box_bounds(front)
        super().__init__(np.mean([gpr.length_scales for gpr in gprs], axis=0), space)

    def eval_acqf(self, x: Any) -> Any:
        import torch

        marginals = [gpr.posterior(x) for gpr in self._gprs]
        means = torch.stack([mean for mean, _ in marginals], -1)
        sigmas = torch.stack([(var + STABILIZING_NOISE).sqrt() for _, var in marginals], -1)
        return log_ehvi(means, sigmas, self._lower, self._width)


class PendingLogEHVI(acqf.BaseAcquisitionFunc):
    """Optuna's q-logEHVI (`acqf.qLogEHVI`) for two objectives, value for value: the same QMC
    fantasies of the trials in flight (`ListConditionalGPRegressor`), reference point and
    per-sample log hypervolume improvement, over each sample's front with its fantasies on it.

    Why hand-written: Optuna tiles each of the 128 samples' fronts with its general m-objective
    box decomposition, O(n^m) Python per sample (40% of a suggestion at 1,000 trials); with two
    objectives the tiling is a sort (`sample_boxes`), done for every sample at once.
    """

    def __init__(
        self, gprs: Sequence[Any], space: Any, front: Any, pending: np.ndarray, n_qmc: int, seed: int
    ) -> None:
        import torch

        self._fantasised = ListConditionalGPRegressor(
            gpr_list=list(gprs),
            X_running=torch.from_numpy(pending),
            n_qmc_samples=n_qmc,
            qmc_seed=seed,
            stabilizing_noise=STABILIZING_NOISE,
        )
        corner = -torch.from_numpy(reference_point(front))  # Optuna's, as a larger-is-better point
        self._lower, self._sides = sample_boxes(front, self._fantasised.get_fantasy_samples(), corner)
        self._strips = StripSums(self._lower, self._sides)
        super().__init__(np.mean([gpr.length_scales for gpr in gprs], axis=0), space)

    def eval_acqf(self, x: Any) -> Any:
        import torch

        samples = self._fantasised.sample_candidate_posterior(x)  # (..., samples, objectives)
        log_hvi = self._strips.log_improvement(samples)
        return torch.special.logsumexp(log_hvi, dim=-1) - math.log(log_hvi.shape[-1])


class StripSums:
    """Each QMC sample's improvement over its boxes (`sample_boxes`: horizontal strips, then
    padding), as Optuna's `_PerSampleParetoBaseline` computes it (the sum over boxes of the product
    of clamp(y - lower, MIN_SIDE, side)), in O(log boxes) per sample and candidate.

    Why hand-written: Optuna's per-box form is O(boxes) per sample (most of a suggestion at 1,000
    trials); the strips are sorted both ways, so a candidate's boxes split by two searches into
    ranges whose clamps are constant, summed from prefix sums made once per acquisition.
    """

    def __init__(self, lower: Any, sides: Any) -> None:
        import torch

        real = torch.isinf(sides[..., 0])  # every strip is open beyond the best first objective
        self._a = torch.where(real, lower[..., 0], torch.inf).contiguous()  # ascending, padding last
        self._minus_b = torch.where(real, -lower[..., 1], torch.inf).contiguous()  # ascending too
        # The top strip's infinite side is never summed (it is the partial strip or above y's).
        height = torch.where(real & torch.isfinite(sides[..., 1]), sides[..., 1], 0.0)
        a = torch.where(real, lower[..., 0], 0.0)
        zero = torch.zeros_like(a[:, :1])
        self._sum_a = torch.cat([zero, a.cumsum(1)], 1)
        self._sum_height = torch.cat([zero, height.cumsum(1)], 1)
        self._sum_area = torch.cat([zero, (a * height).cumsum(1)], 1)
        self._count = real.sum(1, keepdim=True)  # real strips, the first ones
        self._left, self._bottom = lower[..., 0].contiguous(), lower[..., 1].contiguous()
        self._height = sides[..., 1].contiguous()
        # Each padding box adds MIN_SIDE^2, wherever y is.
        self._padding = (lower.shape[1] - self._count).to(lower.dtype) * MIN_SIDE**2
        self._least = lower.shape[1] * MIN_SIDE**2  # every box at MIN_SIDE^2: the exact minimum

    def log_improvement(self, samples: Any) -> Any:
        """log of the improvement of `samples` ((..., QMC samples, 2), larger is better) over its
        sample's boxes, (..., QMC samples).

        With k strips left of y's first objective (a_j < y1) and m above its second (b_j >= y2),
        strip j's sides are: y1 - a_j for j < k (taken as above MIN_SIDE for j < k - 1: the front's
        points are further apart), else MIN_SIDE; MIN_SIDE for j < m, partial at j = m, its height
        for j > m (the strips tile: y2 reaches strip j's top). Strips m, m + 1 (whose top y2 may
        round onto: Optuna's clamp then passes the gradient) and k - 1 are Optuna's products; the
        others range sums, one per quarter of the split: differences of prefix sums only take
        strips whose improvement is at least the gap between two front points wide."""
        import torch

        n_samples = samples.shape[-2]
        y = samples.reshape(-1, n_samples, 2).transpose(0, 1)  # (samples, candidates, 2)
        y1, y2 = y[..., 0].contiguous(), y[..., 1].contiguous()
        k = torch.searchsorted(self._a, y1)  # how many a_j < y1
        m = torch.searchsorted(self._minus_b, -y2, right=True)  # how many b_j >= y2
        eps = MIN_SIDE
        # j < min(m, k - 1): sides y1 - a_j and MIN_SIDE.
        left = (k - 1).clamp(min=0).minimum(m)
        total = eps * (y1 * left - self._sum_a.gather(1, left))
        # k <= j < m: both sides MIN_SIDE.
        total = total + eps**2 * (m - k).clamp(min=0).to(y.dtype)  # not float32's default
        # m + 1 < j < k - 1: y1 - a_j times the strip's height.
        start = (m + 2).clamp(max=self._a.shape[1])
        end = (k - 1).maximum(start)
        total = total + y1 * _range(self._sum_height, start, end) - _range(self._sum_area, start, end)
        # j > m + 1 and j >= k: MIN_SIDE times the strip's height.
        total = total + eps * _range(self._sum_height, start.maximum(k), torch.full_like(k, self._a.shape[1]))
        total = total + self._boxes(y1, y2, m, k - 1)
        log_hvi = (total + self._padding).clamp(min=self._least).log()
        return log_hvi.transpose(0, 1).reshape(samples.shape[:-1])

    def _boxes(self, y1: Any, y2: Any, partial: Any, left: Any) -> Any:
        """The improvement of (`y1`, `y2`) (samples, candidates) in its strips `partial`,
        `partial` + 1 and `left` (samples, candidates) unless `left` is one of the others, as
        Optuna computes it: the product of the clamped sides (the first one's upper end infinite)."""
        import torch

        index = torch.stack([partial, partial + 1, left], -1)  # (samples, candidates, 3)
        counted = (index >= 0) & (index < self._count[..., None])
        counted[..., 2] &= (left != partial) & (left != partial + 1)
        at = index.clamp(0, self._a.shape[1] - 1).view(len(index), -1)
        a, b, height = (v.gather(1, at).view(index.shape) for v in (self._left, self._bottom, self._height))
        floor = torch.tensor(MIN_SIDE, dtype=y1.dtype)
        inside = (y1[..., None] - a).clamp(min=floor) * (y2[..., None] - b).clamp(min=floor, max=height)
        return torch.where(counted, inside, 0.0).sum(-1)


def _range(prefix: Any, start: Any, end: Any) -> Any:
    """Sums of the entries start..end-1 (end >= start) of each row of which `prefix` holds the
    running sums (a leading 0)."""
    return prefix.gather(1, end) - prefix.gather(1, start)


def sample_boxes(front: Any, fantasies: Any, corner: Any) -> tuple[Any, Any]:
    """Lower corners and sides ((samples, boxes, 2)) of the boxes tiling what each QMC sample's
    points (the `front`, (n, 2), with that sample's `fantasies`, (samples, pending, 2); larger is
    better) leave undominated above `corner`: the boxes Optuna's `_get_non_dominated_box_bounds`
    gives, with its padding (corner 0, sides `MIN_SIDE`) where a sample has fewer.

    With the front's points p_1..p_k by the first objective ascending (the second then
    descends), box j = 0..k spans [a_j, inf) x [b_{j+1}, b_j), with a_0 and b_{k+1} the corner's
    and b_0 = inf: horizontal strips, as Optuna cuts them."""
    # Hand-written: Optuna's general box decomposition is O(n^m) Python per sample; in 2D a sort.
    import torch

    points = torch.cat([front.expand(len(fantasies), -1, -1), fantasies], dim=1)
    a, b, on_front = _sorted_fronts(points, corner)
    corner_a, corner_b = (float(c) for c in corner)
    # The strip below each front point, and one more (a virtual point at b = the corner's) at the top.
    b = torch.cat([torch.full_like(b[:, :1], corner_b), b], dim=1)
    on_front = torch.cat([torch.ones_like(on_front[:, :1]), on_front], dim=1)
    # The next front point beyond each one (smaller a, larger b); the corner's a and b = inf if none.
    next_a = _next_on_front(torch.where(on_front[:, 1:], a, corner_a), torch.cummax, corner_a)
    next_b = _next_on_front(torch.where(on_front[:, 1:], b[:, 1:], torch.inf), torch.cummin, torch.inf)
    lower = torch.stack([next_a, b], dim=-1)
    sides = torch.stack([torch.full_like(b, torch.inf), (next_b - b).clamp_min(MIN_SIDE)], dim=-1)
    # Optuna's order (corners ascending in the first objective, then the padding): its sums, in its order.
    lower, sides, on_front = lower.flip(1), sides.flip(1), on_front.flip(1)
    count = on_front.sum(1)
    order = torch.argsort((~on_front).to(torch.int8), dim=1, stable=True)[:, : int(count.max())]
    kept = (torch.arange(order.shape[1]) < count[:, None])[..., None]
    lower = torch.where(kept, lower.gather(1, order[..., None].expand(-1, -1, 2)), 0.0)
    sides = torch.where(kept, sides.gather(1, order[..., None].expand(-1, -1, 2)), MIN_SIDE)
    return lower, sides


def _sorted_fronts(points: Any, corner: Any) -> tuple[Any, Any, Any]:
    """Each sample's points (samples, n, 2) sorted by the first objective, then the second, both
    descending, as columns `a`, `b`, and whether each is on its sample's front: strictly better
    than `corner` in both objectives, and the first copy of a point no earlier one dominates."""
    import torch

    inside = (points > corner).all(-1)
    a = torch.where(inside, points[..., 0], -torch.inf)  # outside points sort last, never on a front
    b = torch.where(inside, points[..., 1], -torch.inf)
    order = torch.argsort(b, dim=1, descending=True, stable=True)
    a, b = a.gather(1, order), b.gather(1, order)
    order = torch.argsort(a, dim=1, descending=True, stable=True)  # stable: ties in a keep b's order
    a, b = a.gather(1, order), b.gather(1, order)
    # An earlier point has a larger or equal a (and b, if a ties): it dominates unless b is larger.
    best_before = torch.cat([torch.full_like(b[:, :1], -torch.inf), b.cummax(1).values[:, :-1]], 1)
    return a, b, b > best_before


def _next_on_front(values: Any, running: Any, none: float) -> Any:
    """For a virtual point before the sorted `values` (samples, n) and each one, the `running`
    (cummax or cummin) of those after it: the next front point's value, `none` past the last."""
    import torch

    following = running(values.flip(1), dim=1).values.flip(1)
    return torch.cat([following, torch.full_like(following[:, :1], none)], dim=1)


def acquisition(
    gprs: Sequence[Any], space: Any, front: Any, pending: np.ndarray | None, n_qmc: int, seed: int
) -> Any:
    """The closed-form logEHVI, or Optuna's q-logEHVI (`PendingLogEHVI`, its boxes a sort) over the
    `pending` (RUNNING) points when there are some, measured from `front` (larger is better in
    every column)."""
    if pending is None:
        return ExactLogEHVI(gprs, space, front)
    return PendingLogEHVI(gprs, space, front, pending, n_qmc, seed)


def log_ehvi(means: Any, sigmas: Any, lower: Any, width: Any) -> Any:
    """log E[hypervolume improvement] of points with independent normal objectives (`means`,
    `sigmas`: (..., m), larger is better) over the boxes of lower corners `lower` and sides `width`
    ((boxes, m); infinite on the side open to improvement) tiling the region the front leaves
    undominated, bounded by the reference point.

    In a box the improvement is the product over objectives of clamp(y - lower, 0, width), and for
    y ~ N(mu, sigma^2), E[clamp(y - l, 0, w)] = sigma (h(a) - h(a - w / sigma)) with
    a = (mu - l) / sigma and h(z) = z Phi(z) + phi(z), computed in log space (log h is Optuna's
    `standard_logei`, stable far into the tails)."""
    import torch

    a = (means[..., None, :] - lower) / sigmas[..., None, :]
    log_h = log_h_of(a)
    # A box open on its better side (beyond the front's extremes) has an infinite width: h(-inf) = 0.
    bounded = torch.isfinite(width)
    log_h_shifted = log_h_of(a - torch.where(bounded, width, 0.0) / sigmas[..., None, :])
    # log(h(a) - h(b)) = log h(a) + log(1 - exp(log h(b) - log h(a))), kept below 0 for the gradient.
    gap = (log_h_shifted - log_h).clamp(max=-1e-12)
    log_side = sigmas.log()[..., None, :] + log_h + torch.where(bounded, _log1mexp(gap), 0.0)
    return torch.logsumexp(log_side.sum(-1), dim=-1)


TAIL = -25.0  # below it log h takes the asymptotic form (Ament et al. 2023, eq. 9), as Optuna's


def log_h_of(z: Any) -> Any:
    """log h(z) = log E[max(0, z + N(0, 1))], Optuna's `standard_logei`, with a finite gradient
    far in the lower tail too: Optuna computes its first form everywhere and overwrites the tail,
    whose underflowed log then sends NaN back through the overwritten entries (seen at log EHVI
    around -450, where the optimiser's local searches then stalled). Each form here only sees the
    arguments it is for."""
    import torch

    tail = z < TAIL
    if not tail.any():
        return standard_logei(z)
    head = standard_logei(torch.where(tail, TAIL, z))
    far = torch.where(tail, z, TAIL - 1.0)
    asymptotic = (
        -0.5 * far**2
        - 0.5 * math.log(2 * math.pi)
        + torch.log1p(math.sqrt(math.pi / 2) * far * torch.special.erfcx(-far / math.sqrt(2)))
    )
    return torch.where(tail, asymptotic, head)


def _log1mexp(x: Any) -> Any:
    """log(1 - exp(x)) for x < 0, accurate at both ends (Maechler 2012)."""
    import torch

    return torch.where(x > -math.log(2), torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def warm_starts(x: np.ndarray, front: Any, rng: np.random.RandomState) -> np.ndarray:
    """Up to `N_WARM_STARTS` of the points `x` on the non-dominated front of `front`, drawn at
    random: where the acquisition optimiser starts its local searches."""
    on_front = x[is_pareto_front(-front.numpy(), assume_unique_lexsorted=False)]
    chosen = rng.choice(len(on_front), size=min(N_WARM_STARTS, len(on_front)), replace=False)
    return on_front[chosen]
