"""bench/suggestion_time.py's studies: as many objectives as the kind says, conflicting, so the
default sampler's several-objective paths are the ones timed."""

from __future__ import annotations

import optuna
import pytest
from optuna.study import StudyDirection

from bench.suggestion_time import KINDS, OBJECTIVES, history
from tuner.samplers import default_sampler
from tuner.space import load_space


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_holds_complete_trials_with_its_objectives(kind: str) -> None:
    study = history(load_space("tiny"), kind, 30)
    trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(trials) == 30 and all(len(t.values) == OBJECTIVES[kind] for t in trials)
    assert all(d == StudyDirection.MINIMIZE for d in study.directions)
    assert all(bool(t.constraints) == (kind == "two_constrained") for t in trials)
    if OBJECTIVES[kind] > 1:
        # The first two conflict: some trial is better in one and worse in the other than another.
        pairs = [(a.values[0] - b.values[0]) * (a.values[1] - b.values[1]) for a in trials for b in trials]
        assert min(pairs) < 0
        assert default_sampler(OBJECTIVES[kind]) == "gp_fidelity"
