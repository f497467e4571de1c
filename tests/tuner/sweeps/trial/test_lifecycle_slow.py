"""Warm starts end to end: an `rnntune sweep` process on real Ray and a real SQLite study. (Widening end to
end runs from the web page: tests/tuner/api/web/test_web_lifecycle.py; the CLI's `--widen` in
tests/tuner/sweeps/widen/test_ranges.py.)"""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS
from tests.tuner.sweep_process import finish, launch, tiny_set_args
from tuner.samplers import make_sampler
from tuner.space import SearchSpace
from tuner.storage.study import load_study, set_status
from tuner.sweeps.study.create import create_study

pytestmark = pytest.mark.slow
COMMON = ["--parallel", "2", "--scheduler", "none", *tiny_set_args()]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A finished study of 10 trials drawn at random (as many as the GP samplers' startup trials)
    and told a value each, without training: a warm start reads only their params and values.
    (cwd, db URL)."""
    cwd = tmp_path_factory.mktemp("lifecycle")
    db = f"sqlite:///{cwd / 'studies.db'}"
    study = create_study("src", storage_url=db, space="tiny", n_trials=10, sampler="random", seed=3,
                         storage_path=cwd / "studies" / "src", overrides={"set": TINY_SETTINGS})  # fmt: skip
    space = SearchSpace.from_dict(study.user_attrs["space_def"])
    study.sampler = optuna.samplers.RandomSampler(seed=3)
    for _ in range(10):
        trial = study.ask()
        params = space.suggest(trial)
        study.tell(trial, 4.0 + 1000 * abs(params["learning_rate"] - 0.002))
    set_status(study, "finished")
    return cwd, db


def test_a_warm_started_sweep_reports_and_uses_its_prior_trials(source, joined_ray):
    cwd, db = source
    usable = [t for t in load_study("src", db).trials if t.state == TrialState.COMPLETE]
    args = ["--name", "warm", "--trials", "2", "--sampler", "gp_fidelity", "--seed", "1", "--db", db]
    proc, log = launch(cwd, [*args, "--warm-start", "src", *COMMON], env=joined_ray)
    assert finish(proc, log, 600) == 0, log.read_text()
    out = log.read_text()
    assert f"warm start: {len(usable)} prior trials from src" in out
    study = load_study("warm", db)
    assert study.user_attrs["warm_start"] == {"studies": ["src"], "trials": len(usable)}
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    assert len(load_study("src", db).trials) == 10  # the source is only read
    # Without priors the first trial would be the seeded random startup point; with at least
    # n_startup_trials of them the GP proposes it (tuner.samplers.prior_trials).
    space = SearchSpace.from_dict(study.user_attrs["space_def"])
    cold = optuna.create_study(sampler=make_sampler("gp_fidelity", seed=1)).ask()
    assert study.trials[0].params != space.suggest(cold)
