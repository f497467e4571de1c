"""Warm starts checked when a study is created (`tuner.sweeps.study.warm_start`, `rnntune sweep --warm-start`) and
the prior trials a sweep loads, on real SQLite studies (no sweep runs here)."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from tests.tuner.edge_study import edge_study
from tuner.cli import main
from tuner.samplers import WARM_START_SAMPLERS
from tuner.spec import SweepSpec
from tuner.storage.study import StudyError, load_study
from tuner.sweeps.study.create import create_study
from tuner.sweeps.study.warm_start import prior_trials


def test_the_source_and_its_trial_count_are_stored(tmp_path):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    edge_study(db, "ptb", tmp_path)
    study = create_study("wt2", storage_url=db, space="tiny", n_trials=4, warm_start="ptb")
    assert study.user_attrs["warm_start"] == {"studies": ["ptb"], "trials": 10}
    assert SweepSpec.of(study.user_attrs).sampler in WARM_START_SAMPLERS  # the default sampler takes priors
    assert load_study("wt2", db).user_attrs["warm_start"] == {"studies": ["ptb"], "trials": 10}
    assert create_study("cold", storage_url=db, space="tiny", n_trials=4).user_attrs["warm_start"] is None


def test_bad_warm_starts_are_refused_before_the_study_exists(tmp_path):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    edge_study(db, "ptb", tmp_path)
    other = optuna.create_study(study_name="other", storage=db)
    other.add_trial(
        create_trial(params={"foo": 1.0}, distributions={"foo": FloatDistribution(0, 2)}, value=1)
    )
    cases = [
        ({"warm_start": "ghost"}, "warm_start: no study named 'ghost'"),
        (
            {"warm_start": "ptb", "sampler": "random"},
            "warm_start: sampler 'random' takes no prior trials; use one of",
        ),
        (
            {"warm_start": "other"},
            "warm_start: study 'other' shares no tuned parameter with space tiny: it lacks",
        ),
    ]
    for kwargs, message in cases:
        with pytest.raises(StudyError, match=message):
            create_study("new", storage_url=db, space="tiny", n_trials=4, **kwargs)
    assert "new" not in [s.study_name for s in optuna.get_all_study_summaries(db)]
    with pytest.raises(StudyError, match=", ".join(WARM_START_SAMPLERS)):
        create_study("new", storage_url=db, space="tiny", n_trials=4, sampler="tpe", warm_start="ptb")


def test_prior_trials_are_the_finished_ones_with_something_to_learn_from(tmp_path):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    source = optuna.create_study(study_name="src", storage=db)
    dist = {"learning_rate": FloatDistribution(0.001, 0.004, log=True)}
    p = {"learning_rate": 0.002}
    source.add_trial(create_trial(params=p, distributions=dist, value=4.0))
    source.add_trial(
        create_trial(params=p, distributions=dist, state=TrialState.PRUNED, intermediate_values={25: 5.0})
    )
    source.add_trial(create_trial(params=p, distributions=dist, state=TrialState.PRUNED))  # no curve
    source.add_trial(create_trial(params=p, distributions=dist, state=TrialState.FAIL))
    priors = prior_trials(db, {"studies": ["src"], "trials": 2})
    assert [(t.number, t.state) for t in priors] == [(0, TrialState.COMPLETE), (1, TrialState.PRUNED)]
    assert priors[1].intermediate_values == {25: 5.0}
    assert prior_trials(db, None) == []


def test_cli_refuses_a_bad_warm_start_with_exit_2(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    edge_study(db, "ptb", tmp_path)
    assert main(["sweep", "--db", db, "--name", "wt2", "--warm-start", "ghost"]) == 2
    assert "warm_start: no study named 'ghost'" in capsys.readouterr().err
    assert main(["sweep", "--db", db, "--name", "wt2", "--warm-start", "ptb", "--sampler", "qmc"]) == 2
    assert f"use one of {', '.join(WARM_START_SAMPLERS)}" in capsys.readouterr().err
    assert main(["sweep", "--db", db, "--resume", "ptb", "--warm-start", "ptb"]) == 2
    assert "--warm-start: cannot change when resuming" in capsys.readouterr().err
    assert "wt2" not in [s.study_name for s in optuna.get_all_study_summaries(db)]
