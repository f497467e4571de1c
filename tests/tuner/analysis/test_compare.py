"""Expected validation performance (Dodge et al. 2019) and the study comparison built on it: the
exact order-statistics formula against brute force, the bootstrap bands' coverage in simulation,
and comparisons of real rnntune studies (same task, another task, reruns, too few trials)."""

from __future__ import annotations

import itertools

import numpy as np
import optuna
import pytest
from scipy import integrate, stats

from tests.tuner.compare_studies import make_compared
from tuner.analysis import compare
from tuner.analysis import expected_best as eb
from tuner.analysis.reads import StudyNotFound, StudyStore

optuna.logging.set_verbosity(optuna.logging.WARNING)
VALUES = [3.1, 2.7, 2.7, 4.0, 3.5]  # a tie included: ties must not change the expectation


@pytest.mark.parametrize("minimize", [True, False])
def test_expected_best_equals_brute_force_over_all_n_tuples(minimize):
    pick = min if minimize else max
    budgets = [1, 2, 3, 4]
    exact = eb.expected_best(VALUES, budgets, minimize)
    for n, value in zip(budgets, exact):
        tuples = list(itertools.product(VALUES, repeat=n))  # every draw of n with replacement, equally likely
        assert value == pytest.approx(sum(pick(t) for t in tuples) / len(tuples), rel=1e-12)
    assert exact[0] == pytest.approx(np.mean(VALUES))  # one draw: the mean
    assert list(exact) == sorted(exact, reverse=minimize)  # more trials never hurt


def test_the_curve_tends_to_the_best_value_and_the_grid_ends_at_the_trial_count():
    assert eb.expected_best(VALUES, [10_000], True)[0] == pytest.approx(2.7, abs=1e-9)
    grid = eb.budget_grid(1234)
    assert grid[0] == 1 and grid[-1] == 1234 and list(grid[:50]) == list(range(1, 51))
    assert len(grid) < 110 and list(grid) == sorted(set(grid))


def _true_expected_min(n: int, dist) -> float:
    """E[min of n iid draws] = ∫ x n f(x) (1 − F(x))^(n−1) dx."""
    return integrate.quad(lambda x: x * n * dist.pdf(x) * dist.sf(x) ** (n - 1), 0, np.inf)[0]


def test_bands_cover_the_true_expected_minimum_at_the_stated_rate():
    """200 studies of 100 trials from a known, right-skewed loss distribution (gamma, shape 2): the
    90% band covers the true expected minimum within ±7 points for n up to a tenth of the trials,
    and, as docs/compare.md says, clearly less at n = N."""
    dist, trials, budgets = stats.gamma(2.0), 100, [1, 3, 5, 10, 100]
    truth = np.array([_true_expected_min(n, dist) for n in budgets])
    rng = np.random.default_rng(12345)
    hits = np.zeros(len(budgets))
    for sim in range(200):
        curve = eb.curve_with_band(dist.rvs(size=trials, random_state=rng), True, budgets=budgets, seed=sim)
        hits += (np.array(curve.low) <= truth) & (truth <= np.array(curve.high))
    coverage = hits / 200
    assert all(abs(c - eb.BAND) <= 0.07 for c in coverage[:4]), coverage
    assert coverage[4] < 0.8, coverage


def test_the_difference_test_separates_a_real_gap_and_not_noise():
    rng = np.random.default_rng(3)
    a, b = 4.0 + rng.gamma(2.0, 0.05, 40), 4.0 + rng.gamma(2.0, 0.05, 40)
    same = eb.difference(a, b, 40, 40, True)
    assert not same.separable and same.low < 0 < same.high
    shifted = eb.difference(a, b + 0.1, 40, 40, True)
    assert shifted.separable and shifted.high < 0 and shifted.estimate == pytest.approx(same.estimate - 0.1)
    assert shifted.se > 0 and shifted.confidence == eb.TEST_CONFIDENCE


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """`mog` (30 COMPLETE around 4.0-4.3, 10 PRUNED at step 50), `lstm` (the LSTM cell, 20 COMPLETE
    0.2 worse), `mog2` (the same values as `mog`), `long` (400 steps), `few` (2 COMPLETE), `rerun`
    (an LSTM study for the reruns test to finalise)."""
    tmp_path = tmp_path_factory.mktemp("compare")
    db_url = f"sqlite:///{tmp_path / 'cmp.db'}"
    rng = np.random.default_rng(0)
    values = 4.0 + 0.3 * rng.random(30)
    make_compared(db_url, "mog", tmp_path, values, pruned=10, seconds=10.0)
    make_compared(db_url, "lstm", tmp_path, 4.2 + 0.3 * rng.random(20), cell="lstm", seconds=8.0)
    make_compared(db_url, "mog2", tmp_path, values[::-1])
    make_compared(db_url, "long", tmp_path, values, overrides={"max_steps": 400})
    make_compared(db_url, "few", tmp_path, [4.1, 4.2])
    make_compared(db_url, "rerun", tmp_path, 4.2 + 0.3 * rng.random(10), cell="lstm")
    make_compared(db_url, "wide", tmp_path, 4.0 + 0.3 * rng.random(300))
    make_compared(db_url, "wide2", tmp_path, 4.0 + 0.3 * rng.random(170), cell="lstm")
    found = StudyStore(db_url)
    yield found
    found.close()


def test_studies_of_one_task_and_different_cells_are_compared(store):
    result = compare.compare(store, ["mog", "lstm"])
    mog, lstm = result["studies"]
    assert (mog["model"], lstm["model"]) == ("mogrifier_lstm", "lstm")
    assert result["task"]["max_steps"] == 200 and result["task"]["hidden_size"] == 48
    # compute: COMPLETE trials ran 200 steps, PRUNED ones the 50 they reported
    assert mog["steps"] == 30 * 200 + 10 * 50 and mog["trial_seconds"] == pytest.approx(30 * 10 + 10 * 2.5)
    assert mog["steps_per_complete"] == pytest.approx(6500 / 30)
    curve = mog["curve"]
    assert curve["n"][-1] == 30 and curve["steps"][0] == pytest.approx(6500 / 30)
    assert curve["seconds"][2] == pytest.approx(3 * 325 / 30)
    assert all(lo <= e <= hi for lo, e, hi in zip(curve["low"], curve["expected"], curve["high"]))
    (verdict,) = result["verdicts"]
    assert verdict["state"] == "separable" and verdict["n"] == 20
    assert verdict["trials"]["better"] == "mog" and verdict["trials"]["ci_high"] < 0
    assert verdict["text"].startswith("mog is better than lstm by ") and "at 20 trials" in verdict["text"]
    assert verdict["steps"]["steps"] == 4000 and verdict["steps"]["n_a"] == int(4000 // (6500 / 30))
    assert "95% percentile interval" in result["test"]


def test_the_same_studies_in_another_order_resample_nothing(store, monkeypatch):
    """Each study's bootstrap is kept in its snapshot: asking B,A after A,B (or A,B again) reuses
    it, and the bands are the same whatever the order."""
    forward = compare.compare(store, ["wide", "wide2"])
    calls = []
    real = eb.Bootstrapped.of
    monkeypatch.setattr(eb.Bootstrapped, "of", lambda *a, **k: calls.append(a) or real(*a, **k))
    backward = compare.compare(store, ["wide2", "wide"])
    assert calls == []
    assert [s["name"] for s in backward["studies"]] == ["wide2", "wide"]
    assert backward["studies"][1]["curve"] == forward["studies"][0]["curve"]
    assert backward["verdicts"][0]["n"] == forward["verdicts"][0]["n"] == 170
    compare.compare(store, ["wide", "mog"])  # other budgets for `wide`: resampled once, for them
    assert [len(values) for values, _minimize in calls].count(300) == 1


def test_the_same_trials_twice_are_not_separable(store):
    (verdict,) = compare.compare(store, ["mog", "mog2"])["verdicts"]
    assert verdict["state"] == "not_separable" and verdict["trials"]["better"] is None
    assert "not separable at this budget, 30 trials" in verdict["text"]


def test_studies_of_different_tasks_are_refused_naming_the_setting(store):
    with pytest.raises(compare.NotComparable, match=r"max_steps differs \(mog: 200, long: 400\)"):
        compare.compare(store, ["mog", "long"])


@pytest.mark.parametrize(
    ("names", "message"),
    [(["mog"], "give 2 to 8"), (["mog", "mog"], "each study once"), (["mog"] * 9, "give 2 to 8")],
)
def test_bad_name_lists_are_refused(store, names, message):
    with pytest.raises(compare.NotComparable, match=message):
        compare.compare(store, names)


def test_an_unknown_study_is_not_found(store):
    with pytest.raises(StudyNotFound):
        compare.compare(store, ["mog", "nope"])


def test_too_few_complete_trials_give_no_verdict(store):
    result = compare.compare(store, ["mog", "few"])
    (verdict,) = result["verdicts"]
    assert verdict["state"] == "insufficient" and verdict["trials"] is None
    assert "few has 2 COMPLETE trials (at least 3 needed)" in verdict["text"]


def test_reruns_are_summarised_or_the_finalize_call_offered(store):
    study = optuna.load_study(study_name="rerun", storage=store.db_url)
    study.set_user_attr(
        "finalize",
        {
            "3": {
                "value": 4.21,
                "params": {},
                "reruns": [{"seed": 1, "val_loss": 4.3}, {"seed": 2, "val_loss": 4.5}],
            },
            "5": {
                "value": 4.25,
                "params": {},
                "reruns": [{"seed": 1, "val_loss": 4.2}, {"seed": 2, "val_loss": 4.3}],
            },
        },
    )
    study.set_user_attr("finalize_status", {"state": "finished"})
    store.invalidate("rerun")
    mog, lstm = compare.compare(store, ["mog", "rerun"])["studies"]
    assert lstm["finalize"]["state"] == "finished" and lstm["finalize"]["run"] is None
    assert [c["trial"] for c in lstm["finalize"]["configurations"]] == [5, 3]
    best = lstm["finalize"]["best"]
    assert best["trial"] == 5 and best["val_loss_mean"] == pytest.approx(4.25)
    assert best["val_loss_sd"] == pytest.approx(np.std([4.2, 4.3], ddof=1))
    assert mog["finalize"]["state"] == "none" and mog["finalize"]["best"] is None
    assert mog["finalize"]["run"] == {
        "command": "rnntune finalize mog --top 3 --seeds 3",
        "method": "POST",
        "path": "/studies/mog/finalize",
        "body": {"top": 3, "seeds": 3},
    }


def test_curves_beyond_the_dense_grid_hold_the_verdicts_budget(store):
    wide, wide2 = compare.compare(store, ["wide", "wide2"])["studies"]
    assert wide["curve"]["n"][-1] == 300 and 170 in wide["curve"]["n"] and len(wide["curve"]["n"]) < 110
    assert wide2["curve"]["n"][-1] == 170
    i = wide["curve"]["n"].index(170)
    values = [t.value for t in optuna.load_study(study_name="wide", storage=store.db_url).trials]
    assert wide["curve"]["expected"][i] == pytest.approx(eb.expected_best(values, [170], True)[0])
