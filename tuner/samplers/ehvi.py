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
    acqf,
    box_bounds,
    is_pareto_front,
    standard_logei,
    standardize_values,
)

N_OBJECTIVES = 2  # the studies EHVI is used for (module docstring)
N_WARM_STARTS = 5  # front points the acquisition optimiser starts from, as Optuna's GPSampler
STABILIZING_NOISE = 1e-12  # added to each posterior variance, as in Optuna's LogEHVI


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


def acquisition(
    gprs: Sequence[Any], space: Any, front: Any, pending: np.ndarray | None, n_qmc: int, seed: int
) -> Any:
    """The closed-form logEHVI, or Optuna's q-logEHVI over the `pending` (RUNNING) points when
    there are some, measured from `front` (larger is better in every column)."""
    if pending is None:
        return ExactLogEHVI(gprs, space, front)
    return acqf.qLogEHVI(
        gpr_list=list(gprs),
        search_space=space,
        Y_train=front,
        n_qmc_samples=n_qmc,
        qmc_seed=seed,
        normalized_params_of_running_trials=pending,
    )


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
