"""Suggestions asked ahead (tuner/sweeps/drive/ask_ahead.py): the helper with plain functions, then the
searcher on a real study, where every trial after the first is sampled in the background while the
trials before it run, and a trial asked ahead but never started is retried on resume."""

from __future__ import annotations

import threading
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests.tuner.sweeps.searcher_study import make_searcher
from tuner.spec import SweepSpec
from tuner.storage.study import load_study, pending_retries
from tuner.sweeps.drive.ask_ahead import MAX_DEPTH, MIN_DEPTH, AskAhead, depth_for
from tuner.sweeps.drive.searcher import ASK_AHEAD, StudySearcher
from tuner.sweeps.drive.study_rules import StudyRules


def counter(limit: int | None = None):
    made = []

    def make() -> int:
        made.append(len(made))
        return made[-1]

    return made, make, (lambda count: limit is None or len(made) < limit)


def wait_for(ahead: AskAhead, count: int) -> None:
    """Until `count` results are ready (the maker runs in its own thread and chains refills)."""
    for _ in range(count + 1):
        if ahead.settle(timeout=10) >= count:
            return
    raise AssertionError(f"fewer than {count} ready")


def test_it_keeps_depth_results_ready_in_order_and_within_the_callers_bound():
    made, make, may = counter(limit=3)
    ahead = AskAhead(make, depth=2, may_make=may)
    assert ahead.take() is None  # nothing made until asked to refill
    ahead.refill()
    wait_for(ahead, 2)
    assert made == [0, 1]  # depth 2
    assert ahead.take() == 0
    ahead.refill()
    wait_for(ahead, 2)
    assert [ahead.take(), ahead.take()] == [1, 2]
    ahead.refill()
    assert ahead.take() is None and made == [0, 1, 2]  # the bound said no more


def test_take_waits_for_the_result_being_made_and_raises_what_making_raised():
    release = threading.Event()

    def slow() -> str:
        assert release.wait(10)
        return "made"

    ahead = AskAhead(slow, depth=1, may_make=lambda count: True)
    ahead.refill()
    threading.Timer(0.2, release.set).start()
    assert ahead.take() == "made"  # waited instead of returning None

    def broken() -> str:
        raise RuntimeError("lease lost")

    failing = AskAhead(broken, depth=1, may_make=lambda count: True)
    failing.refill()
    with pytest.raises(RuntimeError, match="lease lost"):
        failing.take()
    assert failing.take() is None  # raised once


def test_close_hands_back_what_was_not_taken_and_makes_no_more():
    made, make, may = counter()
    ahead = AskAhead(make, depth=2, may_make=may)
    ahead.refill()
    wait_for(ahead, 2)
    assert ahead.close() == [0, 1]
    ahead.refill()
    assert ahead.take() is None and made == [0, 1]


@pytest.fixture
def study_searcher(tmp_path: Path):
    return make_searcher(tmp_path, "ahead", 6)


def test_every_trial_after_the_first_is_sampled_in_the_background(study_searcher, monkeypatch):
    searcher, db = study_searcher
    threads: list[str] = []
    original = StudySearcher._next_trial

    def recorded(self):
        threads.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(StudySearcher, "_next_trial", recorded)
    numbers = [searcher.suggest(f"ray-{k}")["trial_number"] for k in range(6)]
    assert numbers == list(range(6))  # in the order they were asked
    assert threads[0] == threading.current_thread().name  # the first: nothing was ready
    assert threads[1:] == ["rnntune-ask-ahead"] * 5
    assert searcher.suggest("ray-6") == "FINISHED"
    assert len(optuna.load_study(study_name="ahead", storage=db).trials) == 6  # never past the budget


def test_a_trial_asked_ahead_but_never_started_is_retried_on_resume(study_searcher):
    searcher, db = study_searcher
    searcher.suggest("ray-0")
    wait_for(searcher._ahead, ASK_AHEAD)
    assert searcher.interrupt_all("stop requested") == [0]  # the one that ran
    trials = optuna.load_study(study_name="ahead", storage=db).trials
    assert [t.state for t in trials] == [TrialState.FAIL] * (1 + ASK_AHEAD)
    assert [t.user_attrs["error"] for t in trials[1:]] == ["not started: stop requested"] * ASK_AHEAD
    assert [t.number for t in pending_retries(load_study("ahead", db))] == list(range(1 + ASK_AHEAD))


def test_a_sweep_with_a_study_level_stop_rule_asks_nothing_ahead(tmp_path: Path):
    """A stop rule (here --patience) could end the sweep with trials asked that never run."""
    searcher, db = make_searcher(tmp_path, "rule", 6)
    spec = SweepSpec(space="tiny", n_trials=6, patience=3)
    searcher._policies = StudyRules(searcher._study, tmp_path, spec, max_steps=30)
    searcher.suggest("ray-0")
    assert searcher._ahead.settle(timeout=10) == 0
    assert len(optuna.load_study(study_name="rule", storage=db).trials) == 1


def test_the_depth_is_half_the_trials_in_flight_within_its_bounds():
    assert [depth_for(p) for p in (1, 4, 5, 16, 64, 1024)] == [2, 2, 2, 8, 8, 8]
    assert [depth_for(p) for p in (6, 10, 14)] == [3, 5, 7]
    assert all(MIN_DEPTH <= depth_for(p) <= MAX_DEPTH for p in range(1, 200))
