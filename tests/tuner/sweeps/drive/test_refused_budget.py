"""A sweep under a tight bound on the model's size (no Ray: the searcher driven with plain dicts on
a real SQLite study). Settings that break the bound are refused when asked, never handed to Ray
Tune, and use up no trial: the searcher still hands out `n_trials` settings, each within the
bound; the refused ones are in the study as infeasible COMPLETE trials that `n_trials` does not
count, and the report's front, `/pareto`'s points and the export mark them infeasible."""

from __future__ import annotations

import math

import optuna
from optuna.trial import TrialState
from ray.tune.search import Searcher

from tests.conftest import TINY_SETTINGS
from tuner.analysis.export import trials_frame
from tuner.analysis.front import front
from tuner.analysis.reads import TrialDB
from tuner.objectives.goals import Goals
from tuner.space import SearchSpace
from tuner.storage.study import counts_towards_total, finished_count, load_study, open_storage
from tuner.sweeps.drive import searcher as searcher_module
from tuner.sweeps.drive.searcher import StudySearcher
from tuner.sweeps.study.create import create_study
from tuner.sweeps.trial.bounds import refusal

BOUND = 7000  # the tiny model at hidden size 16: most settings lie past it (7k-40k weights)
N_TRIALS = 6


def _searcher(tmp_path, bound: str = f"num_params<={BOUND}") -> tuple[StudySearcher, str]:
    db = f"sqlite:///{tmp_path / 's.db'}"
    create_study(
        "b", storage_url=db, space="tiny", storage_path=tmp_path / "b", overrides={"set": TINY_SETTINGS},
        sampler="random", scheduler="none", seed=3, n_trials=N_TRIALS, constraints=bound,
    )  # fmt: skip
    study = load_study("b", db)
    # The same draws every run (load_study gives Optuna's unseeded TPE).
    study.sampler = optuna.samplers.RandomSampler(seed=3)
    space = SearchSpace.from_dict(study.user_attrs["space_def"])
    goals = Goals.parse(["val_loss"], [bound])
    return StudySearcher(study, space, tmp_path, N_TRIALS, ask_ahead=0, goals=goals), db


def test_refused_settings_use_up_no_trial_and_are_counted_infeasible(tmp_path):
    searcher, db = _searcher(tmp_path)
    configs = [searcher.suggest(f"ray-{i}") for i in range(N_TRIALS)]
    assert searcher.suggest("one-more") == Searcher.FINISHED
    assert all(isinstance(c, dict) for c in configs), searcher.ended_early
    for config in configs:  # every setting handed to Ray keeps the bound
        assert refusal(config["trainer"], [f"num_params<={BOUND}"]) is None
    for i in range(len(configs)):
        searcher.on_trial_complete(
            f"ray-{i}", {"step": 30, "val_loss": 5.0 + i, "num_params": 5000.0, "done": True}
        )
    study = load_study("b", db)
    refused = [t for t in study.trials if "refused" in t.user_attrs]
    assert refused, "seed 3 must draw settings past the bound"
    assert searcher.tally.refused == len(refused)
    for t in refused:
        assert t.state == TrialState.COMPLETE and t.value == math.inf and not counts_towards_total(t)
        assert t.constraints[f"num_params<={BOUND}"] == t.user_attrs["num_params"] - BOUND > 0
        assert t.user_attrs["refused"].startswith("num_params=") and "run_dir" not in t.user_attrs
    assert finished_count(study) == N_TRIALS and len(study.trials) == N_TRIALS + len(refused)

    storage = open_storage(db)
    db_reads = TrialDB(storage)
    records = db_reads.trials(db_reads.study_row("b").study_id)
    goals = Goals.parse(["val_loss"], [f"num_params<={BOUND}"])
    points = {p.number: p for p in front(records, goals)}
    assert {n for n, p in points.items() if not p.feasible} == {t.number for t in refused}
    frame = trials_frame(records, goals)
    marked = frame.set_index("number")["feasible"]
    assert {int(n) for n in marked.index[marked.eq(False).fillna(False)]} == {t.number for t in refused}
    assert frame.set_index("number").loc[refused[0].number, "user_attrs_refused"].startswith("num_params=")


def test_a_space_outside_the_bound_ends_the_sweep_early(tmp_path, monkeypatch):
    monkeypatch.setattr(searcher_module, "MAX_REFUSED", 3)
    searcher, db = _searcher(tmp_path, "num_params<=10")
    assert searcher.suggest("ray-0") == Searcher.FINISHED
    assert "3 settings in a row broke num_params<=10" in (searcher.ended_early or "")
    study = load_study("b", db)
    assert len(study.trials) == 3 and finished_count(study) == 0


def test_a_refusal_from_the_trainable_is_told_as_refused(tmp_path):
    """Where the driver could not size the model the trainable refuses it: the same record."""
    searcher, db = _searcher(tmp_path, "num_params<=1e9")
    assert isinstance(searcher.suggest("ray-0"), dict)
    searcher.on_trial_complete(
        "ray-0",
        {
            "step": 0,
            "val_loss": math.inf,
            "num_params": 2e9,
            "refused": "num_params=2e+09 (bound)",
            "done": True,
        },
    )
    (trial,) = load_study("b", db).trials
    assert trial.state == TrialState.COMPLETE and trial.user_attrs["refused"].startswith("num_params=2e+09")
    assert trial.constraints == {"num_params<=1000000000": 1e9}
