"""The study-level stop rule (`--patience`, `--min-improvement`, `--max-hours`, `--budget`)."""

from __future__ import annotations

import datetime as dt

import pytest
from optuna.trial import TrialState, create_trial
from pydantic import ValidationError

from tuner.policies.study_stop import StudyStop, steps_trained
from tuner.spec.defaults import DEFAULT_BUDGET, default_budget

T0 = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)


def _trials(values):
    """Finished trials in completion order; None is a PRUNED trial."""
    out = []
    for i, v in enumerate(values):
        t = create_trial(
            state=TrialState.PRUNED if v is None else TrialState.COMPLETE,
            value=v,
            intermediate_values={50: 9.0},
        )
        t.number = i
        t.datetime_start = T0 + dt.timedelta(minutes=i)
        t.datetime_complete = T0 + dt.timedelta(minutes=i, seconds=30)
        out.append(t)
    return out


def test_patience_counts_finished_trials_since_the_last_significant_improvement():
    rule = StudyStop(patience=3, min_improvement=0.05)
    # 5.0 best; 4.98 is not significant (0.02 ≤ 0.05); a pruned trial counts; 4.9 resets the count.
    assert rule.stale_trials(_trials([5.0, 4.98, None, 4.9, 4.89])) == (1, 4.9)
    assert rule.reason(_trials([5.0, 4.98, None, 4.9, 4.89]), T0, T0) is None
    reason = rule.reason(_trials([5.0, 4.98, None, 4.97]), T0, T0)
    assert reason is not None and "in 3 trials" in reason and "5.0000" in reason


def test_no_stop_before_any_complete_trial_and_off_by_default():
    assert StudyStop(patience=2).reason(_trials([None, None, None]), T0, T0) is None
    rule = StudyStop()
    assert not rule.active
    assert rule.reason(_trials([5.0] * 50), T0, T0 + dt.timedelta(days=30)) is None


def test_max_hours_counts_from_the_sweep_start():
    rule = StudyStop(max_hours=1.5)
    assert rule.active
    assert rule.reason([], T0, T0 + dt.timedelta(hours=1, minutes=29)) is None
    assert "1.5 h" in rule.reason([], T0, T0 + dt.timedelta(hours=1, minutes=30))


def test_budget_counts_full_trials_worth_of_steps():
    rule = StudyStop(budget=2.5)
    assert rule.active
    assert rule.reason([], T0, T0, steps=499, max_steps=200) is None
    reason = rule.reason([], T0, T0, steps=500, max_steps=200)
    assert reason == "trained 500 steps, 2.5 full trials' worth (--budget 2.5 × 200 steps)"


def test_the_header_names_the_active_rules():
    assert StudyStop().describe(200) == ""
    rule = StudyStop(budget=10, patience=4, min_improvement=0.01)
    assert rule.describe(200) == "--budget 10 (2000 steps this run), --patience 4 (--min-improvement 0.01)"


def test_steps_trained_counts_each_trial_to_its_last_report_running_ones_too():
    pruned = create_trial(state=TrialState.PRUNED, intermediate_values={25: 4.0, 50: 3.9})
    complete = create_trial(state=TrialState.COMPLETE, value=3.0, intermediate_values={200: 3.0, 100: 3.2})
    running = create_trial(state=TrialState.RUNNING, intermediate_values={75: 3.5})
    just_started = create_trial(state=TrialState.RUNNING)
    assert steps_trained([pruned, complete, running, just_started]) == 50 + 200 + 75


def test_the_embedded_default_alone_gets_the_default_budget():
    assert default_budget(None, None) == DEFAULT_BUDGET
    assert default_budget(24, None) is None  # a trial count alone runs all its trials
    assert default_budget(None, 3.0) == default_budget(50, 3.0) == 3.0


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("patience", 0, "greater than or equal to 1"),
        ("min_improvement", -1, "greater than or equal to 0"),
        ("max_hours", 0, "greater than 0"),
        ("budget", -1, "greater than 0"),
        ("patiense", 3, "Extra inputs"),
    ],
)
def test_bad_settings_name_the_field_and_range(field, value, message):
    with pytest.raises(ValidationError) as err:
        StudyStop(**{field: value})
    assert field in str(err.value) and message in str(err.value)
