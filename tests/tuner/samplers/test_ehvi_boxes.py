"""The two-objective q-logEHVI with trials in flight (`tuner.samplers.ehvi.PendingLogEHVI`) against
Optuna's: each QMC sample's boxes as Optuna's general box decomposition tiles that sample's front,
and the acquisition's values and gradients as Optuna's `qLogEHVI` over the same fitted GPs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optuna.distributions import FloatDistribution

from tests.tuner.samplers.test_ehvi_exact import fitted
from tuner.samplers import ehvi
from tuner.upstream.optuna_private import acqf, reference_point, search_space


def _fronts(case: str, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A front (n, 2) and 16 samples' fantasies (16, 3, 2), larger is better, of one kind."""
    n = 1 if case == "single point" else 12
    decimals = 1 if case == "ties in one objective" else 8
    front = rng.normal(size=(n, 2)).round(decimals)
    if case == "ties in one objective":
        front[:, 1] = rng.normal(size=n).round(8)  # ties in the first objective only
    if case == "duplicates":
        front = np.concatenate([front, front[:4], front[:1]])
    fantasies = rng.normal(size=(16, 3, 2)).round(decimals)
    if case == "duplicates":
        fantasies[:8, 0] = front[0]  # a fantasy at a front point
    if case == "dominated":
        fantasies[:8] = front.min(0) - rng.random((8, 3, 2))  # behind every front point
    return torch.from_numpy(front), torch.from_numpy(fantasies)


def _sorted_rows(lower: torch.Tensor, sides: torch.Tensor) -> list[tuple[float, ...]]:
    return sorted(map(tuple, torch.cat([lower, sides], -1).tolist()))


@pytest.mark.parametrize(
    "case", ["random", "duplicates", "dominated", "ties in one objective", "single point"]
)
def test_each_samples_boxes_are_optunas_box_decomposition(case: str) -> None:
    front, fantasies = _fronts(case, np.random.default_rng(3))
    ref = reference_point(front)
    lower, sides = ehvi.sample_boxes(front, fantasies, -torch.from_numpy(ref))
    counts = []
    for s in range(len(fantasies)):
        want_lower, want_upper = acqf._get_non_dominated_box_bounds(torch.cat([front, fantasies[s]]), ref)
        want = _sorted_rows(want_lower, (want_upper - want_lower).clamp_min(ehvi.MIN_SIDE))
        real = torch.isinf(sides[s, :, 0])  # every box is open beyond the best first objective
        assert _sorted_rows(lower[s][real], sides[s][real]) == want, s
        # Padding as Optuna's per-sample baseline pads: corner 0, sides MIN_SIDE.
        assert (lower[s][~real] == 0).all() and (sides[s][~real] == ehvi.MIN_SIDE).all()
        counts.append(len(want))
    assert lower.shape == sides.shape == (len(fantasies), max(counts), 2)


def _fit(x: np.ndarray) -> list:
    """Two GPs fitted to conflicting objectives of the points `x` in [0, 1]^dim (optima apart, so
    the GPs' means at `x` make a front of several points)."""
    return fitted(x, [-((x - 0.2) ** 2).sum(1), -((x - 0.8) ** 2).sum(1)])


def test_its_values_and_gradients_are_optunas_qlogehvi() -> None:
    rng = np.random.default_rng(11)
    x = rng.random((40, 3))
    gprs = _fit(x)
    space = search_space.SearchSpace({f"p{i}": FloatDistribution(0.0, 1.0) for i in range(3)})
    with torch.no_grad():
        front = torch.stack([g.posterior(torch.from_numpy(x))[0] for g in gprs], -1).double()
    pending = 0.2 + 0.6 * rng.random((4, 1)) + 0.05 * rng.random((4, 3))  # near the Pareto set
    ours = ehvi.acquisition(gprs, space, front, pending, 128, 5)
    theirs = acqf.qLogEHVI(
        gpr_list=gprs,
        search_space=space,
        Y_train=front,
        n_qmc_samples=128,
        qmc_seed=5,
        normalized_params_of_running_trials=pending,
    )
    assert isinstance(ours, ehvi.PendingLogEHVI)
    boxes = torch.isinf(ours._sides[..., 0]).sum(1)
    assert boxes.min() < boxes.max()  # the fantasies join some samples' fronts: padding is exercised
    drawn = 64  # candidates drawn at random, then four trials' points and two pending ones
    candidates = np.concatenate([rng.random((drawn, 3)), x[:4], pending[:2]])
    values, grads = [], []
    for acquisition in (ours, theirs):
        point = torch.from_numpy(candidates).requires_grad_(True)
        value = acquisition.eval_acqf(point)
        value.sum().backward()
        values.append(value.detach())
        grads.append(point.grad)
    assert torch.isfinite(values[0]).all() and torch.isfinite(grads[0]).all()
    assert torch.allclose(values[0], values[1], rtol=0, atol=1e-9), (values[0] - values[1]).abs().max()
    away = slice(0, drawn)  # the random candidates: away from every trial
    assert torch.allclose(grads[0][away], grads[1][away], rtol=0, atol=1e-9), (
        (grads[0][away] - grads[1][away]).abs().max()
    )
    # At the trials' points the posterior's std is small (noise alone; it vanishes at the pending
    # ones), its gradient (~1/std) multiplies each sample's, and the samples' terms cancel to up to
    # ~1e5: the strip sums' (`ehvi.StripSums`) other order of the same terms, 1e-16 apart per
    # sample, leaves them up to 1.5e-8 apart relative there (how far depends on the CPU's BLAS).
    near = slice(drawn, None)
    assert torch.allclose(grads[0][near], grads[1][near], rtol=1e-7, atol=1e-9), (
        ((grads[0][near] - grads[1][near]) / grads[1][near]).abs().max()
    )


def _reference_log_improvement(lower: torch.Tensor, sides: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Optuna's per-sample log improvement, box by box (`_PerSampleParetoBaseline`): the sum over
    the boxes of the product of clamp(y - lower, MIN_SIDE, side), taken in log space."""
    floor = torch.tensor(ehvi.MIN_SIDE, dtype=torch.float64)
    inside = (y.unsqueeze(-2) - lower).clamp(min=floor, max=sides)
    return torch.special.logsumexp(inside.log().sum(-1), dim=-1)


def _edge_candidates(lower: torch.Tensor, sides: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """(48, samples, 2) points of each sample on its strips' corners and edges: a first objective at
    a strip's left edge or just past it, a second at a strip's bottom, top or within MIN_SIDE."""
    real = torch.isinf(sides[..., 0]).sum(1)
    j = torch.from_numpy(rng.integers(0, 1 << 30, size=(48, len(real)))) % real
    corner = lower[torch.arange(len(real)), j]  # (48, samples, 2)
    top = corner[..., 1] + sides[torch.arange(len(real)), j][..., 1]
    first = corner[..., 0] + torch.from_numpy(rng.choice([0.0, 0.5e-12, 2e-12, 0.3], size=j.shape))
    second = torch.where(
        torch.isfinite(top) & torch.from_numpy(rng.random(j.shape) < 0.5), top, corner[..., 1]
    )
    second = second + torch.from_numpy(rng.choice([0.0, 0.0, -0.5e-12, 0.5e-12], size=j.shape))
    return torch.stack([first, second], -1)


@pytest.mark.parametrize(
    "case", ["random", "duplicates", "dominated", "ties in one objective", "single point"]
)
def test_strip_sums_are_the_box_by_box_improvement(case: str) -> None:
    rng = np.random.default_rng(7)
    front, fantasies = _fronts(case, rng)
    corner = -torch.from_numpy(reference_point(front))
    lower, sides = ehvi.sample_boxes(front, fantasies, corner)
    # The layout the sums rely on: strips by the first objective ascending, the second descending,
    # tiling it (each one's top the previous one's bottom, up to MIN_SIDE), the top one open.
    for s in range(len(fantasies)):
        n = int(torch.isinf(sides[s, :, 0]).sum())
        assert (lower[s, 1:n, 0] > lower[s, : n - 1, 0]).all() and (
            lower[s, 1:n, 1] < lower[s, : n - 1, 1]
        ).all()
        assert torch.isinf(sides[s, 0, 1]) and torch.isfinite(sides[s, 1:n, 1]).all()
        assert torch.equal(
            sides[s, 1:n, 1], (lower[s, : n - 1, 1] - lower[s, 1:n, 1]).clamp_min(ehvi.MIN_SIDE)
        )
    n = len(fantasies)
    candidates = torch.cat(
        [
            torch.from_numpy(rng.normal(size=(64, n, 2))),  # around the front
            front.min(0).values - torch.from_numpy(rng.random((16, n, 2))),  # dominated
            corner - torch.from_numpy(rng.random((8, n, 2))),  # beyond the corner: every box at MIN_SIDE^2
            front.max(0).values + 100 * torch.from_numpy(rng.random((8, n, 2))),  # far beyond the front
            _edge_candidates(lower, sides, rng),
        ]
    ).requires_grad_(True)
    values = []
    grads = []
    for log_improvement in (
        ehvi.StripSums(lower, sides).log_improvement,
        lambda y: _reference_log_improvement(lower, sides, y),
    ):
        value = log_improvement(candidates)
        (grad,) = torch.autograd.grad(value.sum(), candidates)
        values.append(value.detach())
        grads.append(grad)
    assert values[0].shape == values[1].shape == candidates.shape[:-1]
    # Equal logs within 1e-9: the improvements within 1e-9 relative.
    assert torch.allclose(values[0], values[1], rtol=0, atol=1e-9), (values[0] - values[1]).abs().max()
    finite = torch.isfinite(grads[1])
    assert finite.all() and torch.isfinite(grads[0]).all()
    assert ((grads[0] - grads[1]).abs() <= 1e-6 * grads[1].abs()).all(), (grads[0] - grads[1]).abs().max()
