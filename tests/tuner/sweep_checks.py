"""Assertions shared by the sweep tests: what every stored trial of a finished sweep must hold."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.trial import TrialState

from tuner.space import SearchSpace


def check_trials(study: optuna.Study) -> dict[TrialState, int]:
    """Params in range, curves, states, checkpoints; returns the count of trials per state."""
    space = SearchSpace.from_dict(study.user_attrs["space_def"])
    max_steps = space.fixed["max_steps"]
    every = space.fixed["eval_every"]
    states: dict[TrialState, int] = {}
    for t in study.trials:
        states[t.state] = states.get(t.state, 0) + 1
        assert t.state != TrialState.RUNNING, f"trial {t.number} left RUNNING"
        for name, value in t.params.items():
            assert space.param(name).contains(value), (t.number, name, value)
        if t.state == TrialState.FAIL:
            assert t.user_attrs.get("error"), f"FAIL trial {t.number} has no error"
            continue
        curve = t.intermediate_values
        assert curve, f"trial {t.number} has no curve"
        assert all(step % every == 0 for step in curve)
        assert Path(t.user_attrs["run_dir"]).is_dir()
        assert Path(t.user_attrs["checkpoint"]).is_file()
        assert t.user_attrs["node"] and t.user_attrs["wall_time_s"] > 0
        if t.state == TrialState.COMPLETE:
            assert max(curve) == max_steps
            assert t.value == min(curve.values())
        else:
            assert t.state == TrialState.PRUNED and max(curve) < max_steps
    best = study.best_trial
    assert best.state == TrialState.COMPLETE
    return states
