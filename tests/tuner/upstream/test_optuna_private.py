"""The behaviour rnntune relies on in Optuna's private parts (`tuner.upstream.optuna_private`), run
against the installed Optuna: an upgrade that changes any of it fails here, not mid-sweep
(docs/contracts.md, "What an upgrade of Optuna must re-check")."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
import torch
from optuna.distributions import FloatDistribution

from tuner.upstream import optuna_private as private


def test_the_installed_optuna_passes_and_another_line_is_refused_by_name():
    private.check()
    with pytest.raises(RuntimeError, match=r"optuna 6\.0\.0: rnntune is written against Optuna 5\.0\.x"):
        private.check("6.0.0")


def test_standardize_values_clips_infinities_to_the_finite_extremes():
    """A refused setting's +inf (docs/sweeps.md) and a diverged trial's become the worst finite value."""
    values = np.array([[1.0], [3.0], [np.inf], [-np.inf]])
    with pytest.warns(UserWarning, match="Clip non-finite"):
        standardized, mean, std = private.standardize_values(values)
    clipped = np.array([1.0, 3.0, 3.0, 1.0])
    assert np.allclose(standardized[:, 0], (clipped - clipped.mean()) / clipped.std())
    assert mean[0] == pytest.approx(2.0) and std[0] == pytest.approx(1.0)


def test_is_pareto_front_marks_the_non_dominated_losses():
    losses = np.array([[1.0, 4.0], [2.0, 2.0], [3.0, 3.0], [4.0, 1.0]])
    assert list(private.is_pareto_front(losses, assume_unique_lexsorted=False)) == [True, True, False, True]


def test_trial_id_is_the_storage_id_of_the_trial():
    study = optuna.create_study()
    study.ask()
    trial = study.ask()
    assert study._storage.get_trial(private.trial_id(trial)).number == trial.number == 1


def test_the_constrained_acquisition_prefers_a_feasible_point_to_a_better_infeasible_one():
    """rnntune's GP (tuner.samplers.constraints) feeds Optuna's LogCEI one GP per constraint: a point
    past the bound must score below a feasible one even where the objective GP predicts better."""
    space = private.search_space.SearchSpace({"x": FloatDistribution(0.0, 1.0)})
    x = np.linspace(0.0, 1.0, 11)[:, None]
    y = x[:, 0]  # larger is better: the objective improves towards x = 1
    violation = x[:, 0] - 0.5  # feasible at x <= 0.5
    fit = dict(
        is_categorical=np.array([False]),
        log_prior=private.prior.default_log_prior,
        minimum_noise=private.prior.DEFAULT_MINIMUM_NOISE_VAR,
        gpr_cache=None,
        deterministic_objective=True,
    )
    objective = private.gp.fit_kernel_params(X=x, Y=(y - y.mean()) / y.std(), **fit)
    flipped = -violation
    constraint = private.gp.fit_kernel_params(X=x, Y=(flipped - flipped.mean()) / flipped.std(), **fit)
    feasible_best = float(((y - y.mean()) / y.std())[violation <= 0].max())
    acquisition = private.acqf.LogCEI(
        gpr=objective,
        search_space=space,
        threshold=feasible_best,
        constraints_gpr_list=[constraint],
        constraints_threshold_list=[-flipped.mean() / flipped.std()],
    )
    scores = acquisition.eval_acqf(torch.tensor([[0.48], [0.95]], dtype=torch.float64))
    assert scores[0] > scores[1]
