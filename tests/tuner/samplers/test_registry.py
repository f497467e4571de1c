"""Samplers from `tuner.samplers.make_sampler` drive real Optuna ask/tell loops."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import optuna
import pytest
from optuna.trial import TrialState

from tuner.samplers import (
    DEFAULT_SAMPLER,
    RETIRED_SAMPLERS,
    SAMPLERS,
    FidelityGP,
    GPSampler,
    HalfRank,
    Subset,
    make_sampler,
    sampler_options,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)

# Few startup trials so the model-based samplers (GP, TPE) are past their random phase quickly.
FAST = {"n_startup_trials": 4}


def build(name: str, seed: int | None) -> optuna.samplers.BaseSampler:
    options = FAST if "n_startup_trials" in sampler_options(name) else {}
    return make_sampler(name, seed=seed, **options)


def suggest(trial: optuna.Trial) -> dict:
    """A small Table 2.4-like space where the Mogrifier parameters exist only for the Mogrifier."""
    cell = trial.suggest_categorical("cell", ["lstm", "mogrifier_lstm"])
    trial.suggest_float("learning_rate", 1e-3, 4e-3, log=True)
    trial.suggest_float("state_dropout", 0.0, 0.8)
    if cell == "mogrifier_lstm":
        trial.suggest_int("mogrifier_rounds", 0, 6)
        trial.suggest_int("mogrifier_rank", -20, 100)
    return trial.params


def objective(p: dict) -> float:
    loss = (math.log(p["learning_rate"] / 2e-3)) ** 2 + (p["state_dropout"] - 0.3) ** 2
    if p["cell"] == "mogrifier_lstm":
        loss += 0.01 * abs(p["mogrifier_rounds"] - 5) - 0.05
    return loss


def run(study: optuna.Study, n: int) -> None:
    for _ in range(n):
        trial = study.ask()
        study.tell(trial, objective(suggest(trial)))


def test_names_and_default() -> None:
    assert {"gp", "tpe", "random", "qmc"} <= set(SAMPLERS)
    assert DEFAULT_SAMPLER in SAMPLERS


@pytest.mark.parametrize("name", SAMPLERS)
def test_drives_ask_tell_on_conditional_space(name: str, tmp_path) -> None:
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(storage=storage, sampler=build(name, seed=0))
    run(study, 8)
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 8
    for t in trials:
        assert t.value == objective(t.params)  # samplers that warp values fit on copies
        mogrifier = t.params["cell"] == "mogrifier_lstm"
        assert ("mogrifier_rounds" in t.params) == mogrifier
        assert ("mogrifier_rank" in t.params) == mogrifier
        assert 1e-3 <= t.params["learning_rate"] <= 4e-3
        assert 0.0 <= t.params["state_dropout"] <= 0.8
        if mogrifier:
            assert 0 <= t.params["mogrifier_rounds"] <= 6
            assert -20 <= t.params["mogrifier_rank"] <= 100


def suggest_point(trial: optuna.Trial) -> tuple[float, float, int]:
    """A flat space (the GP's q-logEI is slow over categoricals); floats on their unit scale."""
    lr = trial.suggest_float("learning_rate", 1e-3, 4e-3, log=True)
    dropout = trial.suggest_float("state_dropout", 0.0, 0.8)
    rounds = trial.suggest_int("mogrifier_rounds", 0, 6)
    return math.log(lr / 1e-3) / math.log(4.0), dropout / 0.8, rounds


@pytest.mark.parametrize("name", SAMPLERS)
def test_suggestion_avoids_pending_trials(name: str) -> None:
    study = optuna.create_study(sampler=build(name, seed=1))
    for _ in range(6):
        trial = study.ask()
        lr, dropout, rounds = suggest_point(trial)
        study.tell(trial, (lr - 0.5) ** 2 + (dropout - 0.4) ** 2 + 0.01 * rounds)
    pending = [suggest_point(study.ask()) for _ in range(4)]
    lr, dropout, rounds = suggest_point(study.ask())
    for p_lr, p_dropout, p_rounds in pending:
        # A sampler blind to RUNNING trials returns the same point again (distance 0.0).
        assert rounds != p_rounds or math.hypot(lr - p_lr, dropout - p_dropout) > 1e-3


@pytest.mark.parametrize("name", SAMPLERS)
def test_seed_makes_suggestions_reproducible(name: str) -> None:
    def history(seed: int) -> list[dict]:
        study = optuna.create_study(sampler=build(name, seed=seed))
        run(study, 7)
        return [t.params for t in study.trials]

    first = history(7)
    assert history(7) == first
    assert history(8) != first


def test_unknown_name_lists_the_samplers() -> None:
    with pytest.raises(ValueError, match="unknown sampler 'bayes'") as err:
        make_sampler("bayes")
    for name in SAMPLERS:
        assert name in str(err.value)


def test_unknown_option_lists_the_options() -> None:
    with pytest.raises(ValueError, match=r"unknown option.*n_startup") as err:
        make_sampler("gp", seed=0, n_startup=3)
    assert "n_startup_trials" in str(err.value)


def test_options_reach_the_sampler() -> None:
    def history(sampler: optuna.samplers.BaseSampler) -> list[dict]:
        study = optuna.create_study(sampler=sampler)
        run(study, 7)
        return [t.params for t in study.trials]

    # Until n_startup_trials are done the GP draws from its random sampler with the same seed.
    random = history(make_sampler("random", seed=5))
    assert history(make_sampler("gp", seed=5, n_startup_trials=100)) == random
    assert history(make_sampler("gp", seed=5, n_startup_trials=3)) != random


def test_retired_names_map_to_a_registered_sampler() -> None:
    assert set(RETIRED_SAMPLERS) == {"gp_warped", "gp_rungs", "gp_bohb"}
    for old, new in RETIRED_SAMPLERS.items():
        assert old not in SAMPLERS and new == DEFAULT_SAMPLER


@pytest.mark.parametrize("name", ["gp_warped", "gp_rungs", "gp_bohb"])
def test_a_retired_name_is_refused_naming_its_replacement(name: str) -> None:
    with pytest.raises(ValueError, match=f"sampler '{name}' was retired.*use '{DEFAULT_SAMPLER}'"):
        make_sampler(name, seed=0)
    with pytest.raises(ValueError, match="retired"):
        sampler_options(name)


def test_the_default_is_the_composed_gp_with_a_subset() -> None:
    sampler = make_sampler(DEFAULT_SAMPLER, seed=0)
    assert isinstance(sampler, GPSampler)
    assert isinstance(sampler._fidelity, FidelityGP) and isinstance(sampler._warping, HalfRank)
    assert sampler._subset == Subset()  # the cap measured for the 1 s goal (docs/samplers.md)
    assert "subset" in sampler_options(DEFAULT_SAMPLER) and "fidelity" not in sampler_options(DEFAULT_SAMPLER)


def test_only_the_gp_samplers_load_pytorch():
    """A sweep's driver builds its sampler in-process: rnntune's GP brings PyTorch (Optuna's GP runs
    on it) and Optuna's private GP parts, checked then; with any other sampler the driver's modules
    leave both unloaded (docs/samplers.md, "Time per suggestion")."""
    code = """
import json, sys
import tuner.sweeps.drive.execute, tuner.sweeps.drive.searcher, tuner.sweeps.drive.tracking
import tuner.sweeps.trial.trainable
from tuner.samplers import make_sampler
loaded = {}
for name in sys.argv[1:]:
    make_sampler(name, seed=0)
    loaded[name] = sorted({"torch", "optuna._gp.gp"} & set(sys.modules))
print(json.dumps(loaded))
"""
    names = ["random", "tpe", "qmc", "nsga2", "gp_fidelity"]
    done = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert loaded == {**{n: [] for n in names[:-1]}, "gp_fidelity": ["optuna._gp.gp", "torch"]}
