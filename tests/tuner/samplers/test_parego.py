"""ParEGO's scalarisation (`tuner.samplers.parego`) and rnntune's GP on several objectives: which
trials count, with what value, and early-stopped trials informing the search."""

from __future__ import annotations

import warnings

import numpy as np
import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from tuner.samplers import make_sampler
from tuner.samplers.constraints import constraint_matrix, feasible
from tuner.samplers.parego import RHO, scalarised, weights

optuna.logging.set_verbosity(optuna.logging.WARNING)
X = {"x": FloatDistribution(0.0, 1.0)}


def _study() -> optuna.Study:
    study = optuna.create_study(directions=["minimize", "maximize"])
    with warnings.catch_warnings():  # experimental in Optuna 5: the names the sweep gives objectives
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(["val_loss", "tokens_per_s"])
    return study


def _pruned(x: float, curve: dict[int, float], speed: float | None) -> optuna.trial.FrozenTrial:
    attrs = {} if speed is None else {"tokens_per_s": speed}
    return create_trial(
        state=TrialState.PRUNED, params={"x": x}, distributions=X, intermediate_values=curve, user_attrs=attrs
    )


def test_chebyshev_values_of_complete_and_pruned_trials() -> None:
    study = _study()
    study.add_trial(create_trial(values=[1.0, 100.0], params={"x": 0.1}, distributions=X))
    study.add_trial(create_trial(values=[3.0, 300.0], params={"x": 0.9}, distributions=X))
    study.add_trial(_pruned(0.5, {10: 4.0, 20: 2.0}, 200.0))  # loss 2 at its last step
    study.add_trial(_pruned(0.7, {10: 2.5}, None))  # no speed recorded: left out
    lam = np.array([0.25, 0.75])
    out = scalarised(study, study.get_trials(deepcopy=False), lam)
    assert [t.number for t in out] == [0, 1, 2]
    # Normalised over the trials' last values: loss in [1, 3], speed (maximised: -speed) in
    # [-300, -100].
    z = {0: (0.0, 1.0), 1: (1.0, 0.0), 2: (0.5, 0.5)}
    expected = {n: max(lam * z[n]) + RHO * float(np.dot(lam, z[n])) for n in z}
    assert out[0].value == pytest.approx(expected[0]) and out[1].value == pytest.approx(expected[1])
    assert out[2].value is None and out[2].intermediate_values[20] == pytest.approx(expected[2])
    # Step 10's loss 4 lies beyond the worst final loss: z = 1.5 on the loss.
    assert out[2].intermediate_values[10] == pytest.approx(
        max(0.25 * 1.5, 0.75 * 0.5) + RHO * (0.375 + 0.375)
    )
    assert study.trials[0].values == [1.0, 100.0]  # the stored trials are untouched


def test_weights_lie_on_the_simplex_and_follow_the_seed() -> None:
    a = weights(3, np.random.RandomState(0))
    assert a.sum() == pytest.approx(1.0) and np.all(a >= 0)
    assert np.allclose(a, weights(3, np.random.RandomState(0)))


def test_running_trials_stay_pending() -> None:
    study = _study()
    study.add_trial(create_trial(values=[1.0, 100.0], params={"x": 0.1}, distributions=X))
    running = study.ask({"x": X["x"]})
    out = scalarised(study, study.get_trials(deepcopy=False), np.array([0.5, 0.5]))
    assert out[-1].number == running.number and out[-1].state == TrialState.RUNNING
    assert out[-1].values is None and not out[-1].intermediate_values


def test_early_stopped_trials_count_towards_the_gp() -> None:
    """With 3 COMPLETE trials and n_startup_trials 6, only the 4 PRUNED ones that carry their
    measures take the GP past its random start (BOHB's rule fits the 7 trials' values at step 50):
    it then suggests from the model (relative)."""

    def relative_after(pruned_speed: float | None) -> dict:
        study = _study()
        for i, x in enumerate((0.1, 0.5, 0.9)):
            study.add_trial(
                create_trial(
                    values=[1.0 + x, 100.0 * (1 + i)],
                    params={"x": x},
                    distributions=X,
                    intermediate_values={50: 2.0 + x},
                )
            )
        for x in (0.2, 0.3, 0.6, 0.8):
            study.add_trial(_pruned(x, {50: 2.0 + x}, pruned_speed))
        sampler = make_sampler("gp_fidelity", seed=0, n_startup_trials=6)
        study.ask()
        return sampler.sample_relative(study, study.trials[-1], X)

    assert relative_after(150.0)  # 7 observations >= 6: the GP suggests
    assert relative_after(None) == {}  # 3 observations: still random


def test_constraint_matrix_marks_missing_values_unknown() -> None:
    a = create_trial(value=1.0, params={"x": 0.1}, distributions=X, system_attrs={"constraints:m": -1.0})
    b = create_trial(value=1.0, params={"x": 0.2}, distributions=X)
    c = create_trial(value=1.0, params={"x": 0.3}, distributions=X, system_attrs={"constraints:m": 0.5})
    matrix = constraint_matrix([a, b, c])
    assert matrix is not None and matrix.shape == (3, 1) and np.isnan(matrix[1, 0])
    assert feasible(matrix).tolist() == [True, False, False]
    assert constraint_matrix([b]) is None


def test_the_curve_is_of_the_objective_without_a_user_attr() -> None:
    """Objectives (size, loss): a pruned trial with `num_params` stored has its curve taken as the
    loss, whatever the order of the objectives."""
    study = optuna.create_study(directions=["minimize", "minimize"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(["num_params", "val_loss"])
    study.add_trial(create_trial(values=[1e6, 2.0], params={"x": 0.1}, distributions=X))
    study.add_trial(create_trial(values=[3e6, 1.0], params={"x": 0.9}, distributions=X))
    study.add_trial(
        create_trial(
            state=TrialState.PRUNED,
            params={"x": 0.5},
            distributions=X,
            intermediate_values={10: 1.5},
            user_attrs={"num_params": 2e6},
        )
    )
    out = scalarised(study, study.get_trials(deepcopy=False), np.array([0.5, 0.5]))
    # Size 2e6 in [1e6, 3e6] and loss 1.5 in [1, 2]: z = (0.5, 0.5). Read the other way round
    # (loss 2e6), z would be (0.5, 1e6) and the value enormous.
    assert out[2].intermediate_values[10] == pytest.approx(0.5 * 0.5 + RHO * 0.5)
