"""The study-level stop rule (`--patience`, `--min-improvement`, `--max-hours`)."""

from __future__ import annotations

import datetime as dt

import pytest
from optuna.trial import TrialState, create_trial
from pydantic import ValidationError

from tuner.study_stop import StudyStop

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


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("patience", 0, "greater than or equal to 1"),
        ("min_improvement", -1, "greater than or equal to 0"),
        ("max_hours", 0, "greater than 0"),
        ("patiense", 3, "Extra inputs"),
    ],
)
def test_bad_settings_name_the_field_and_range(field, value, message):
    with pytest.raises(ValidationError) as err:
        StudyStop(**{field: value})
    assert field in str(err.value) and message in str(err.value)
