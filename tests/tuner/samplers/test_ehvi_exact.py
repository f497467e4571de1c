"""The closed-form EHVI (`tuner.samplers.ehvi.ExactLogEHVI`) against the expectations it replaces:
a Monte Carlo estimate with numpy alone, and Optuna's own LogEHVI (QMC over the same GPs and the
same boxes) with many samples."""

from __future__ import annotations

import numpy as np
import torch
from optuna.distributions import FloatDistribution

from tuner.samplers import ehvi
from tuner.upstream.optuna_private import acqf, box_bounds, gp, prior, search_space, standard_logei

RNG = np.random.default_rng(7)


def _fit(x: np.ndarray) -> list:
    """Two GPs fitted to conflicting objectives of the points `x` in [0, 1]^dim."""
    return fitted(x, [np.sin(3 * x).sum(1), -((x - 0.6) ** 2).sum(1)])


def fitted(x: np.ndarray, ys: list[np.ndarray]) -> list:
    """Optuna's GP fitted to each of the objectives `ys` (larger is better) at the points `x`."""
    return [
        gp.fit_kernel_params(
            X=x,
            Y=(y - y.mean()) / y.std(),
            is_categorical=np.zeros(x.shape[1], dtype=bool),
            log_prior=prior.default_log_prior,
            minimum_noise=prior.DEFAULT_MINIMUM_NOISE_VAR,
            deterministic_objective=False,
        )
        for y in ys
    ]


def _gprs(n: int = 24, dim: int = 3) -> tuple[list, object, np.ndarray]:
    """The GPs of `n` random points, their search space and the points."""
    x = RNG.random((n, dim))
    space = search_space.SearchSpace({f"p{i}": FloatDistribution(0.0, 1.0) for i in range(dim)})
    return _fit(x), space, x


def _front(gprs: list, x: np.ndarray) -> torch.Tensor:
    with torch.no_grad():
        return torch.stack([g.posterior(torch.from_numpy(x))[0] for g in gprs], -1).double()


def test_log_ehvi_is_the_expectation_a_monte_carlo_estimate_finds() -> None:
    """Boxes of a 3-point front; the improvement of normal samples summed box by box in numpy."""
    front = torch.tensor([[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]], dtype=torch.float64)
    lower, width = box_bounds(front)
    means = torch.tensor([[0.6, 0.7], [-0.5, -0.5], [0.4, 0.4]], dtype=torch.float64)
    sigmas = torch.tensor([[0.3, 0.2], [0.1, 0.1], [1.0, 0.5]], dtype=torch.float64)
    got = ehvi.log_ehvi(means, sigmas, lower, width).exp().numpy()
    samples = RNG.standard_normal((400_000, 1, 2)) * sigmas.numpy() + means.numpy()
    low, side = lower.numpy(), width.numpy()
    inside = np.clip(samples[:, :, None, :] - low, 0.0, side).prod(-1).sum(-1)
    expected = inside.mean(0)
    assert np.allclose(got, expected, rtol=0.02, atol=1e-6), (got, expected)
    assert got[1] < 1e-6 < got[0]  # a candidate far behind the front adds next to nothing


def test_it_matches_optunas_qmc_logehvi_over_the_same_gps() -> None:
    gprs, space, x = _gprs()
    front = _front(gprs, x)
    candidates = torch.from_numpy(RNG.random((64, x.shape[1])))
    exact = ehvi.ExactLogEHVI(gprs, space, front).eval_acqf(candidates).detach()
    qmc = acqf.LogEHVI(gpr_list=gprs, search_space=space, Y_train=front, n_qmc_samples=8192, qmc_seed=0)
    sampled = qmc.eval_acqf(candidates).detach()
    worth = sampled > -6  # deep in the tails 8192 QMC samples see too few improving draws
    assert worth.sum() >= 12
    assert torch.allclose(exact[worth], sampled[worth], atol=0.05), (
        (exact[worth] - sampled[worth]).abs().max()
    )
    assert torch.equal(exact.argsort()[-8:].sort().values, sampled.argsort()[-8:].sort().values)


def test_its_gradient_is_finite_and_points_uphill() -> None:
    gprs, space, x = _gprs()
    acquisition = ehvi.ExactLogEHVI(gprs, space, _front(gprs, x))
    point = RNG.random(x.shape[1])
    value, grad = acquisition.eval_acqf_with_grad(point)
    assert np.isfinite(value) and np.all(np.isfinite(grad)) and np.linalg.norm(grad) > 0
    step = point + 1e-4 * grad / np.linalg.norm(grad)
    assert acquisition.eval_acqf_no_grad(step[None])[0] > value


def test_its_gradient_stays_finite_far_behind_the_front() -> None:
    """Points whose log EHVI is in the hundreds below zero (Optuna's log h alone gave NaN there)."""
    gprs, space, x = _gprs()
    acquisition = ehvi.ExactLogEHVI(gprs, space, _front(gprs, x))
    far = [(v, g) for v, g in map(acquisition.eval_acqf_with_grad, RNG.random((300, x.shape[1]))) if v < -300]
    assert far and all(np.all(np.isfinite(g)) for _, g in far)


def test_log_h_is_optunas_and_its_gradient_stays_finite_far_in_the_tail() -> None:
    z = torch.tensor([-400.0, -60.0, -25.5, -25.0, -24.0, -3.0, 0.0, 4.0], dtype=torch.float64)
    assert torch.allclose(ehvi.log_h_of(z), standard_logei(z), rtol=1e-12)
    z.requires_grad_(True)
    ehvi.log_h_of(z).sum().backward()
    assert z.grad is not None and torch.isfinite(z.grad).all() and (z.grad > 0).all()


def test_the_closed_form_serves_only_when_no_trial_is_in_flight() -> None:
    """With trials in flight Optuna's q-logEHVI stays (its boxes a sort, test_ehvi_boxes.py):
    believing them at their means, the cheaper way, found smaller fronts (docs/samplers.md)."""
    gprs, space, x = _gprs()
    front = _front(gprs, x)
    assert isinstance(ehvi.acquisition(gprs, space, front, None, 128, 0), ehvi.ExactLogEHVI)
    pending = ehvi.acquisition(gprs, space, front, RNG.random((2, x.shape[1])), 128, 0)
    assert isinstance(pending, ehvi.PendingLogEHVI)
