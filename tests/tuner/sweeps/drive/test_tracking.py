"""The driver's tracker callback: trials under the study's numbers, each step once, a retry's copied
curve first, endings as the study is told them. A fake searcher and fake trackers, no Ray run."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from optuna.trial import TrialState, create_trial

from tuner.errors import InvalidInput
from tuner.spec.sweep_spec import validate
from tuner.sweeps.drive.tracking import TrackerCallback, open_trackers
from tuner.sweeps.study.create import create_study
from tuner.sweeps.trackers.installed import check_available
from tuner.sweeps.trackers.records import Ending, Point


@dataclass
class FakeSearcher:
    live: dict[str, Any] = field(default_factory=dict)
    told: list = field(default_factory=list)

    def start(self, trial_id: str, number: int, params: dict, curve: dict | None = None) -> None:
        self.live[trial_id] = SimpleNamespace(
            trial=SimpleNamespace(number=number), params=params, curve=dict(curve or {})
        )

    def tell(self, number: int, state: TrialState, value: float | None = None, **attrs: Any) -> None:
        trial = create_trial(state=state, value=value, user_attrs=attrs)
        trial.number = number
        for listener in self.told:
            listener(trial)


class Recorder:
    name = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def begin(self) -> None:
        pass

    def start_trial(self, number, params) -> None:
        self.calls.append(("start", number, dict(params)))

    def log(self, number, point: Point) -> None:
        self.calls.append(("log", number, point.step, point.scalars))

    def end_trial(self, number, ending: Ending) -> None:
        self.calls.append(("end", number, ending))

    def close(self, status) -> None:
        self.calls.append(("close", status))


def _result(trial_id: str, callback: TrackerCallback, **result: Any) -> None:
    callback.on_trial_result(0, [], SimpleNamespace(trial_id=trial_id), result)


def test_trials_are_logged_by_study_number_once_per_step_and_ended_as_told():
    searcher, tracker = FakeSearcher(), Recorder()
    callback = TrackerCallback(searcher, [tracker], print)
    searcher.start("ray-a", 4, {"lr": 0.1})
    _result("ray-a", callback, step=10, val_loss=5.0, lr=0.1)
    _result("ray-a", callback, step=10, val_loss=5.0, lr=0.1)  # reported again: logged once
    _result("ray-a", callback, step=20, val_loss=4.0, train_loss=4.2)
    _result("ray-a", callback, step=20, val_loss=4.0, final=True, best_val_loss=4.0)  # the summary
    _result("ray-unknown", callback, step=10, val_loss=3.0)  # no live trial: nothing
    searcher.tell(4, TrialState.COMPLETE, 4.0, checkpoint="/s/trial-4/best.pt")
    searcher.tell(5, TrialState.FAIL, error="not started: stopped")  # asked ahead, never ran
    assert callback.close("finished") == {"fake": 0}
    assert tracker.calls == [
        ("start", 4, {"lr": 0.1}),
        ("log", 4, 10, {"val_loss": 5.0, "lr": 0.1}),
        ("log", 4, 20, {"val_loss": 4.0, "train_loss": 4.2}),
        ("end", 4, Ending("COMPLETE", 4.0, "/s/trial-4/best.pt")),
        ("close", "finished"),
    ]


def test_a_retry_is_a_run_of_its_own_that_starts_with_the_attempts_curve():
    searcher, tracker = FakeSearcher(), Recorder()
    callback = TrackerCallback(searcher, [tracker], print)
    # Trial 7 continues trial 2 from its last.pt: the study copied 2's curve; the trainer reports
    # its last evaluation (step 20) again, then goes on.
    searcher.start("ray-a", 7, {"lr": 0.2}, curve={10: 5.0, 20: 4.5})
    _result("ray-a", callback, step=20, val_loss=4.5, train_loss=4.6)
    _result("ray-a", callback, step=30, val_loss=4.4)
    callback.close("stopped")
    assert tracker.calls[:4] == [
        ("start", 7, {"lr": 0.2}),
        ("log", 7, 10, {"val_loss": 5.0}),
        ("log", 7, 20, {"val_loss": 4.5, "train_loss": 4.6}),
        ("log", 7, 30, {"val_loss": 4.4}),
    ]


def test_no_tracker_by_default_and_mlflow_refused_by_name_without_its_client(monkeypatch, tmp_path):
    assert open_trackers(validate({}), "s", tmp_path) == []
    assert [t.name for t in open_trackers(validate({"tensorboard": True}), "s", tmp_path)] == ["tensorboard"]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "mlflow" else real(name))
    spec = validate({"mlflow_uri": "http://127.0.0.1:5000"})
    with pytest.raises(InvalidInput, match=r"mlflow_uri: .*pip install 'rnntune\[mlflow\]'"):
        check_available(spec)
    with pytest.raises(InvalidInput, match="mlflow_uri: needs the MLflow client"):  # no study is created
        create_study("s", spec, storage_url=f"sqlite:///{tmp_path / 'db.sqlite'}", storage_path=tmp_path)
