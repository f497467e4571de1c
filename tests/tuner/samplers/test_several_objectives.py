"""Every sampler of `make_sampler` in studies with several directions and with constraints set by
`Trial.set_constraint` (Optuna 5's API): ask/tell with trials in flight, and suggestions that
concentrate where the constraints hold. The same contract for all, as Optuna's own suites
(test_contracts.py) are; `random` and `qmc` draw without a model, so they only have to run."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from tuner.samplers import (
    DEFAULT_MULTI_OBJECTIVE_SAMPLER,
    DEFAULT_SAMPLER,
    SAMPLERS,
    default_sampler,
    make_sampler,
    sampler_options,
)
from tuner.sweeps.drive.writer import report

optuna.logging.set_verbosity(optuna.logging.WARNING)

MODEL_FREE = ("random", "qmc")  # they draw without a model: nothing to concentrate
# NSGA-II breeds a generation from the last one; a child may copy a parent (no crossover, no
# mutation), pending or not, and it takes generations to concentrate: its trials, and from which
# trial on the feasible share is measured.
GENERATIONS = {"nsga2": (80, 40)}
# Optuna's GPSampler: its CI runs its own constrained cases; slow here (a GP fit per suggestion).
SLOW = {"gp"}


def _params(names: list[str] | tuple[str, ...]) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in names]


def build(name: str, seed: int, startup: int) -> optuna.samplers.BaseSampler:
    options: dict = {"n_startup_trials": startup} if "n_startup_trials" in sampler_options(name) else {}
    if name == "nsga2":
        options["population_size"] = startup + 2  # small generations: a test's trials make several
    return make_sampler(name, seed=seed, **options)


def in_flight(study: optuna.Study, n: int, k: int, evaluate: Callable[[optuna.Trial], object]) -> None:
    """`n` trials with `k` pending at a time (ask until k are pending, tell the oldest)."""
    pending: list[optuna.Trial] = []
    told = 0
    while told < n:
        while len(pending) < k and told + len(pending) < n:
            trial = study.ask()
            trial.suggest_float("x", -2.0, 2.0)
            trial.suggest_float("y", -2.0, 2.0)
            pending.append(trial)
        trial = pending.pop(0)
        study.tell(trial, evaluate(trial))  # type: ignore[arg-type]
        told += 1


def two_objectives(trial: optuna.Trial) -> list[float]:
    x, y = trial.params["x"], trial.params["y"]
    return [(x - 1) ** 2 + y**2, -((x + 1) ** 2 + y**2)]  # minimise, maximise (negated distance)


@pytest.mark.parametrize("name", _params(SAMPLERS))
def test_several_directions_with_trials_in_flight(name: str) -> None:
    study = optuna.create_study(directions=["minimize", "maximize"], sampler=build(name, 0, 6))
    in_flight(study, 14, 4, two_objectives)
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 14
    points = np.array([[t.params["x"], t.params["y"]] for t in trials])
    assert np.all(np.abs(points) <= 2.0)
    if name not in GENERATIONS:
        distances = np.linalg.norm(points[:, None] - points[None], axis=-1) + np.eye(len(points))
        assert distances.min() > 1e-6  # no suggestion repeats a pending one
    assert len(study.best_trials) >= 1


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")  # set_metric_names
@pytest.mark.parametrize("name", _params(SAMPLERS))
def test_early_stopped_trials_with_curves(name: str) -> None:
    """As a sweep under early stopping leaves them: most trials PRUNED with a stored loss curve
    (`tuner.sweeps.drive.writer.report`) and the other measure as a user attr. Every sampler
    suggests through them (Optuna's TPE ranking pruned trials used to raise here)."""
    study = optuna.create_study(directions=["minimize", "maximize"], sampler=build(name, 0, 4))
    study.set_metric_names(["val_loss", "tokens_per_s"])
    for i in range(16):
        trial = study.ask()
        x, y = trial.suggest_float("x", -2.0, 2.0), trial.suggest_float("y", -2.0, 2.0)
        loss, speed = (x - 1) ** 2 + y**2, 10.0 - (x + 1) ** 2
        trial.set_user_attr("tokens_per_s", speed)
        for step in (1, 2):
            report(trial, loss + 1.0 / step, step)
        if i % 4 == 3:
            study.tell(trial, [loss, speed])
        else:
            study.tell(trial, state=TrialState.PRUNED)
    states = [t.state for t in study.trials]
    assert states.count(TrialState.PRUNED) == 12 and states.count(TrialState.COMPLETE) == 4
    assert all(
        t.intermediate_values[1] == pytest.approx(t.intermediate_values[2] + 0.5) for t in study.trials
    )
    assert all(abs(t.params["x"]) <= 2.0 and abs(t.params["y"]) <= 2.0 for t in study.trials)


def constrained(objectives: int) -> Callable[[optuna.Trial], list[float]]:
    """The objectives pull towards (1, 1); feasible only where x + y <= -1, 28% of the box."""

    def evaluate(trial: optuna.Trial) -> list[float]:
        x, y = trial.params["x"], trial.params["y"]
        trial.set_constraint("budget", x + y + 1.0)
        values = [(x - 1) ** 2 + (y - 1) ** 2, (x - 1.5) ** 2 + (y - 0.5) ** 2]
        return values[:objectives]

    return evaluate


@pytest.mark.parametrize("objectives", [1, 2])
@pytest.mark.parametrize("name", _params([n for n in SAMPLERS if n not in MODEL_FREE]))
def test_constrained_suggestions_concentrate_where_feasible(name: str, objectives: int) -> None:
    n, start = GENERATIONS.get(name, (16, 6))
    study = optuna.create_study(directions=["minimize"] * objectives, sampler=build(name, 0, 6))
    in_flight(study, n, 2, constrained(objectives))
    later = [t for t in study.trials if t.number >= start]
    share = np.mean([t.params["x"] + t.params["y"] <= -1.0 for t in later])
    assert share >= 0.5, f"{name}: {share:.2f} of the model's suggestions feasible (random: 0.28)"
    assert all(t.constraints.keys() == {"budget"} for t in study.trials)


@pytest.mark.parametrize("name", MODEL_FREE)
def test_model_free_samplers_run_constrained_studies(name: str) -> None:
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=build(name, 0, 4))
    in_flight(study, 6, 2, constrained(2))
    assert all(t.state == TrialState.COMPLETE and not math.isnan(t.values[0]) for t in study.trials)


def test_several_objectives_get_their_default() -> None:
    assert default_sampler(1) == DEFAULT_SAMPLER
    assert default_sampler(3) == DEFAULT_MULTI_OBJECTIVE_SAMPLER
    assert DEFAULT_MULTI_OBJECTIVE_SAMPLER in SAMPLERS
