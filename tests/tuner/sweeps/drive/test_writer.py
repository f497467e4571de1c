"""The fenced study writer (`tuner.sweeps.drive.writer`) on a real SQLite study with plain messages,
no Ray: what each write stores, what it counts, and that nothing is written once the lease is lost."""

from __future__ import annotations

import math

import optuna
import pytest
import sqlalchemy as sa
from optuna.trial import TrialState

from tests.tuner.sweeps.searcher_study import Fence
from tuner.objectives.goals import Goals
from tuner.storage import trial_attrs
from tuner.sweeps.drive.writer import ERROR_CHARS, LiveTrial, StudyWriter
from tuner.sweeps.trial.lifecycle import Evaluation, Outcome, Verdict

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture
def writer(tmp_path):
    study = optuna.create_study(study_name="w", storage=f"sqlite:///{tmp_path / 's.db'}")
    fence, finished = Fence(), []
    return StudyWriter(study, fence, after_trial=lambda: finished.append(True)), fence, finished


def start(writer: StudyWriter, ray_id: str = "ray-0") -> LiveTrial:
    trial = writer.study.ask()
    live = LiveTrial(trial=trial, params={}, run_dir=f"/runs/trial-{trial.number}")
    writer.started(live, ray_id)
    return live


def stored(writer: StudyWriter, number: int = 0) -> optuna.trial.FrozenTrial:
    return writer.study.get_trials(deepcopy=False)[number]


def test_evaluations_go_on_the_curve_once_per_step_and_finite_only(writer):
    w, _, _ = writer
    live = start(w)
    w.record(live, Evaluation(10, 5.0, {trial_attrs.NODE: "10.0.0.2"}), {"step": 10, "time_total_s": 2.0})
    w.record(live, Evaluation(10, 4.0), {"step": 10})  # the same step again: kept as first reported
    w.record(live, Evaluation(20, math.nan), {"step": 20})  # never on the curve
    trial = stored(w)
    assert trial.intermediate_values == {10: 5.0} and live.last_step == 20
    assert trial.user_attrs[trial_attrs.NODE] == "10.0.0.2"
    assert trial.user_attrs[trial_attrs.RUN_DIR] == "/runs/trial-0"
    assert trial.user_attrs[trial_attrs.RAY_TRIAL_ID] == "ray-0"


def test_a_database_out_of_reach_drops_the_point_and_the_trial_goes_on(writer, monkeypatch):
    w, _, _ = writer
    live = start(w)

    def unreachable(*_args):
        raise sa.exc.OperationalError("INSERT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(live.trial, "report", unreachable)
    w.record(live, Evaluation(10, 5.0), {"step": 10})
    assert live.curve == {} and stored(w).intermediate_values == {}
    monkeypatch.undo()
    w.record(live, Evaluation(20, 4.5), {"step": 20})
    assert stored(w).intermediate_values == {20: 4.5}


@pytest.mark.parametrize(
    ("outcome", "state", "value"),
    [
        (Outcome(Verdict.COMPLETE, value=4.2, attrs={trial_attrs.BEST_STEP: 80}), TrialState.COMPLETE, 4.2),
        (Outcome(Verdict.PRUNED), TrialState.PRUNED, None),
        (Outcome(Verdict.FAIL, error="TrainingDiverged: 10 restores"), TrialState.FAIL, None),
    ],
    ids=["complete", "pruned", "fail"],
)
def test_a_finished_trial_is_told_its_verdict_with_its_wall_time_and_counted(writer, outcome, state, value):
    w, _, finished = writer
    live = start(w)
    w.finish(live, outcome)
    trial = stored(w)
    assert trial.state == state and trial.value == value
    assert trial.user_attrs[trial_attrs.WALL_TIME_S] >= 0
    assert all(trial.user_attrs[k] == v for k, v in outcome.attrs.items())
    assert (w.tally.complete, w.tally.pruned, w.tally.failed) == (
        int(state == TrialState.COMPLETE),
        int(state == TrialState.PRUNED),
        int(state == TrialState.FAIL),
    )
    assert finished == [True] and w.tally.finished[0].number == 0


def test_a_failure_to_retry_stores_its_reason_and_is_not_counted_as_failed(writer):
    w, _, finished = writer
    live = start(w)
    frozen = w.fail(live, "worker died: " + "x" * 5000, needs_retry=True, wall=True)
    assert frozen is not None and frozen.state == TrialState.FAIL
    attrs = stored(w).user_attrs
    assert attrs[trial_attrs.NEEDS_RETRY] is True and len(attrs[trial_attrs.ERROR]) == ERROR_CHARS
    assert trial_attrs.WALL_TIME_S in attrs
    assert w.tally.failed == 0 and finished == []  # its retry finishes it


def test_once_the_lease_is_lost_nothing_is_written(writer):
    w, fence, finished = writer
    live = start(w)
    fence.holds = False
    w.record(live, Evaluation(10, 5.0), {"step": 10})
    assert w.fail(live, "interrupted", needs_retry=True) is None
    w.finish(live, Outcome(Verdict.COMPLETE, value=4.0))
    trial = stored(w)
    assert trial.state == TrialState.RUNNING and trial.intermediate_values == {}  # for the next driver
    assert not {trial_attrs.ERROR, trial_attrs.WALL_TIME_S} & set(trial.user_attrs)
    assert finished == [] and not w.writable


def test_every_trial_stores_its_measures_and_constraint_values(writer):
    """Measures under their names whatever the study optimises (one objective here), and the
    constraint values Optuna's feasibility-aware samplers read."""
    w, _, _ = writer
    w.goals = Goals.parse(constraints=["num_params<=100", "tokens_per_s>=5"])
    live = start(w)
    for step, speed in ((10, 4.0), (20, 8.0), (30, 9.0)):
        w.record(
            live,
            Evaluation(step, 5.0 - step / 100),
            {"step": step, "tokens_per_s": speed, "num_params": 120, "peak_memory": 1000 * step},
        )
    w.finish(live, Outcome(Verdict.COMPLETE, value=4.7))
    trial = stored(w)
    assert trial.state == TrialState.COMPLETE and trial.value == 4.7
    attrs = trial.user_attrs
    assert (attrs["num_params"], attrs["tokens_per_s"], attrs["peak_memory"]) == (120, 8.0, 30000)
    assert attrs["wall_time"] >= 0
    assert trial.system_attrs["constraints:num_params<=100"] == 20.0  # past the bound: infeasible
    assert trial.system_attrs["constraints:tokens_per_s>=5"] == -3.0


def test_a_study_with_several_objectives_gets_its_curve_and_values(tmp_path):
    """Optuna refuses `Trial.report` with several objectives; the curve is stored all the same
    (through the storage call `report` makes: the private `_trial_id` this relies on is checked
    here), and the trial is told every objective in order."""
    study = optuna.create_study(
        study_name="mo", storage=f"sqlite:///{tmp_path / 's.db'}", directions=["minimize", "maximize"]
    )
    w = StudyWriter(study, Fence(), goals=Goals.parse(["val_loss", "tokens_per_s"]))
    live = start(w)
    w.record(live, Evaluation(10, 5.0), {"step": 10, "tokens_per_s": 50.0})
    w.record(live, Evaluation(20, 4.0), {"step": 20, "tokens_per_s": 70.0})
    w.finish(live, Outcome(Verdict.COMPLETE, value=4.0))
    trial = stored(w)
    assert trial.intermediate_values == {10: 5.0, 20: 4.0}
    assert trial.values == [4.0, 60.0] and trial.state == TrialState.COMPLETE
    other = start(w)  # no throughput measured: cannot be told its values, so FAIL saying why
    w.finish(other, Outcome(Verdict.COMPLETE, value=4.5))
    assert stored(w, 1).state == TrialState.FAIL and "missing" in stored(w, 1).user_attrs["error"]
