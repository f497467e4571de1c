"""The union search space, inactive imputation and learnt activity rules of rnntune's GP samplers."""

from __future__ import annotations

import optuna
import pytest
from optuna._gp.search_space import SearchSpace
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from tuner.samplers import DEFAULT_SAMPLER, activity, make_sampler
from tuner.samplers.inactive import INACTIVE_AT, gp_space, inactive_value, with_params
from tuner.samplers.union_space import active_params, study_search_space, union_search_space


def trial(number: int, params: dict, distributions: dict, state: TrialState = TrialState.COMPLETE):
    t = create_trial(params=params, distributions=distributions, value=0.0, state=TrialState.COMPLETE)
    t.number = number
    t.state = state
    return t


def test_widened_ranges_merge_to_the_widest() -> None:
    old = trial(0, {"x": 1.0, "n": 3}, {"x": FloatDistribution(0, 5), "n": IntDistribution(1, 4)})
    new = trial(1, {"x": 9.0, "n": 6}, {"x": FloatDistribution(2, 10), "n": IntDistribution(2, 8)})
    space = union_search_space([old, new])
    assert space == {"n": IntDistribution(1, 8), "x": FloatDistribution(0, 10)}
    assert active_params(old, space) == {"x": 1.0, "n": 3}  # old trials lie in the widened range


def test_conditional_parameters_are_kept() -> None:
    a = trial(0, {"rounds": 0}, {"rounds": IntDistribution(0, 6)})
    b = trial(
        1, {"rounds": 2, "rank": 40}, {"rounds": IntDistribution(0, 6), "rank": IntDistribution(-20, 100)}
    )
    space = union_search_space([a, b])
    assert set(space) == {"rounds", "rank"}
    assert active_params(a, space) == {"rounds": 0}


def test_incompatible_kinds_the_latest_wins() -> None:
    linear = trial(0, {"lr": 0.5}, {"lr": FloatDistribution(0.1, 1.0)})
    log = trial(1, {"lr": 0.01}, {"lr": FloatDistribution(1e-3, 1.0, log=True)})
    space = union_search_space([linear, log])
    assert space == {"lr": FloatDistribution(1e-3, 1.0, log=True)}
    assert active_params(linear, space) == {}  # the other kind counts as not having it
    linear.number, log.number = 1, 0  # the latest by trial number, whatever the order given
    assert union_search_space([linear, log])["lr"] == FloatDistribution(0.1, 1.0)
    choices = trial(2, {"lr": "a"}, {"lr": CategoricalDistribution(["a", "b"])})
    assert union_search_space([log, linear, choices]) == {"lr": CategoricalDistribution(["a", "b"])}


def test_single_valued_and_failed_trials_are_left_out() -> None:
    fixed = trial(0, {"x": 1.0, "k": 2}, {"x": FloatDistribution(0, 2), "k": IntDistribution(2, 2)})
    failed = trial(1, {"z": 1.0}, {"z": FloatDistribution(0, 2)}, TrialState.FAIL)
    assert study_search_space([fixed, failed]) == {"x": FloatDistribution(0, 2)}


@pytest.mark.parametrize(
    "distribution",
    [
        FloatDistribution(0.0, 1.0),
        FloatDistribution(1e-3, 4e-3, log=True),
        FloatDistribution(-10, 10, step=0.5),
        IntDistribution(-20, 100),
        IntDistribution(1, 100, log=True),
        IntDistribution(0, 10, step=2),
    ],
)
def test_inactive_value_normalises_outside_the_range(distribution) -> None:
    t = trial(0, {}, {})
    proxy = with_params(t, {"x": distribution})
    assert proxy.params == {"x": inactive_value(distribution)} and t.params == {}
    normalized = SearchSpace(gp_space({"x": distribution})).get_normalized_params([proxy])
    assert normalized[0, 0] == pytest.approx(INACTIVE_AT)


def test_inactive_categorical_is_no_choice() -> None:
    space = {"cell": CategoricalDistribution(["lstm", "mogrifier_lstm"])}
    rows = [trial(0, {}, {}), trial(1, {"cell": "lstm"}, space)]
    normalized = SearchSpace(gp_space(space)).get_normalized_params([with_params(t, space) for t in rows])
    assert list(normalized[:, 0]) == [-1.0, 0.0]


def test_activity_rules_need_a_repeated_pattern() -> None:
    space = {"rounds": IntDistribution(0, 6), "rank": IntDistribution(-20, 100)}
    rounds = [0, 3, 5, 1, 0, 2]
    rows = []
    for i, r in enumerate(rounds):
        params = {"rounds": r, **({"rank": 40} if r else {})}
        rows.append(trial(i, params, {n: space[n] for n in params}))
    proxies = [with_params(t, space) for t in rows]
    normalized = SearchSpace(gp_space(space)).get_normalized_params(proxies)
    active = [set(active_params(t, space)) for t in rows]
    rules = activity.learn(space, normalized, active)
    assert [(r.target, r.parent) for r in rules] == [(1, 0)]  # rank depends on rounds
    assert len(rules[0].values) == 1  # rounds = 0 only
    # One trial without rank at rounds = 0 is a coincidence, not a rule.
    assert activity.learn(space, normalized[1:], active[1:]) == []


def test_a_real_study_has_the_conditional_parameter_in_the_relative_space(tmp_path) -> None:
    space = {"rounds": IntDistribution(0, 6), "rank": IntDistribution(-20, 100)}
    ours = optuna.create_study(
        storage=f"sqlite:///{tmp_path / 's.db'}", sampler=make_sampler(DEFAULT_SAMPLER, seed=0)
    )
    stock = optuna.create_study(sampler=optuna.samplers.GPSampler(seed=0))
    for study in (ours, stock):
        study.add_trial(
            create_trial(params={"rounds": 0}, distributions={"rounds": space["rounds"]}, value=1.0)
        )
        study.add_trial(create_trial(params={"rounds": 2, "rank": 40}, distributions=space, value=0.5))
    new = ours.ask()
    assert ours.sampler.infer_relative_search_space(ours, new._cached_frozen_trial) == space
    assert set(stock.sampler.infer_relative_search_space(stock, stock.ask()._cached_frozen_trial)) == {
        "rounds"
    }
