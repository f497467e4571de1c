"""The study store's cache: a snapshot patched after changes equals a fresh full read."""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from tests.tuner.api.fixtures import SPACE, make_study
from tuner.api.reads import StudyStore


def _as_tuples(snapshot):
    return [(t.number, t.state, t.value, t.params, t.curve, t.user_attrs) for t in snapshot.trials]


def test_patched_snapshot_equals_a_full_read(tmp_path):
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    study = make_study(db_url, "s", tmp_path / "storage")
    store = StudyStore(db_url, revalidate_s=0.0)
    before = store.snapshot(store.row("s"))
    assert len(before.trials) == 10 and before.best.number == 0

    running = study.trials[9]
    assert running.state == TrialState.RUNNING
    study._storage.set_trial_intermediate_value(running._trial_id, 500, 3.9)
    study._storage.set_trial_user_attr(running._trial_id, "checkpoint", "/x/best.pt")
    study.tell(9, 3.5)  # the running trial completes and becomes the best
    study.add_trial(optuna.trial.create_trial(
        params={"learning_rate": 0.003, "input_dropout": 0.2, "mogrifier_rounds": 6},
        distributions=SPACE, value=4.6))
    make_study(db_url, "other", tmp_path / "storage2")  # another study's rows must not leak in

    after = store.snapshot(store.row("s"))
    assert after is not before
    full = StudyStore(db_url).snapshot(StudyStore(db_url).row("s"))
    assert _as_tuples(after) == _as_tuples(full)
    assert len(after.trials) == 11 and after.best.number == 9
    assert after.by_number[9].curve[-1] == (500, 3.9) and after.by_number[9].user_attrs["checkpoint"] == "/x/best.pt"
    assert store.snapshot(store.row("s")) is after  # unchanged study: the same snapshot
