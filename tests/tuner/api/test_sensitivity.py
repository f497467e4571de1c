"""The Appendix 2.B analysis and the importances on real SQLite studies, in-process and over HTTP:
pruned trials at the step where they were stopped, the COMPLETE-only switch, the neighbourhood
centred on the best COMPLETE trial, the importances' fidelity and their bootstrap intervals."""

from __future__ import annotations

import math
import random

import httpx
import optuna
import pytest
from optuna.distributions import (
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import TrialState

from tests.tuner.api.fixtures import live_server, make_study
from tests.tuner.api.pruned_study import BEST_PARAMS, SPACE, asha_study, final_value
from tuner.analysis import importances, sensitivity
from tuner.analysis.reads import StudyStore
from tuner.api import ApiSettings


def _records(db_url: str, name: str):
    store = StudyStore(db_url)
    snapshot = store.snapshot(store.row(name))
    completed = [t for t in snapshot.ordered("COMPLETE", "objective") if t.completed]
    return completed, snapshot.ordered("PRUNED", "number")


@pytest.fixture(scope="module")
def asha(tmp_path_factory):
    """A live API over one 60-trial ASHA-shaped study: (base URL, database URL)."""
    root = tmp_path_factory.mktemp("asha")
    db_url = f"sqlite:///{root / 's.db'}"
    asha_study(db_url, "asha")
    with live_server(ApiSettings(db_url=db_url, storage_root=root)) as url:
        yield url, db_url


def test_sensitivity_includes_pruned_trials_at_their_step(asha):
    url, db_url = asha
    body = httpx.get(f"{url}/studies/asha/sensitivity", timeout=60).json()
    completed, pruned = _records(db_url, "asha")
    assert body["include"] == "all" and body["n_completed"] == len(completed) == 6
    assert body["n_pruned"] == len(pruned) == 54
    # centred on the best COMPLETE trial, although PRUNED trial 1 reported a lower value
    assert body["best"]["number"] == 0 and body["best"]["params"] == BEST_PARAMS
    assert body["windows"]["input_dropout"]["center"] == BEST_PARAMS["input_dropout"]
    near = {n["number"]: n for n in body["neighbours"]}
    assert near[1]["state"] == "PRUNED" and near[1]["step"] == 50 and near[1]["value"] == 1.0
    # compared with the best trial at the same step: 1.0 against the best's 4.0 + 100 / 50
    assert near[1]["delta"] == pytest.approx(1.0 - 6.0)
    assert all((n["state"] == "PRUNED") == (n["step"] is not None) for n in body["neighbours"])
    summary = body["summary"]
    assert summary["count"] == len(near) == summary["count_complete"] + summary["count_pruned"]
    assert summary["count_pruned"] >= 1

    only = httpx.get(f"{url}/studies/asha/sensitivity", params={"include": "complete"}, timeout=60).json()
    assert only["include"] == "complete" and only["n_pruned"] == 0 and only["best"]["number"] == 0
    assert all(n["state"] == "COMPLETE" for n in only["neighbours"])
    assert {n["number"] for n in only["neighbours"]} == {
        n for n, v in near.items() if v["state"] == "COMPLETE"
    }
    assert only["importance_fidelity"] == {
        "step": None,
        "kind": "objective",
        "n_trials": 6,
        "n_complete": 6,
        "n_pruned": 0,
        "min_trials": 8,
    }
    bad = httpx.get(f"{url}/studies/asha/sensitivity", params={"include": "some"}, timeout=60)
    assert bad.status_code == 422 and "query.include" in bad.json()["detail"]


def test_parallel_coordinates_draw_pruned_trials_grey_with_their_step(asha):
    url, _ = asha
    plot = httpx.get(f"{url}/studies/asha/plots/parallel-coordinates", timeout=60).json()
    trace = plot["figure"]["data"][0]
    assert len(plot["trial_numbers"]) == len(plot["states"]) == len(plot["steps"]) == 60
    assert all(len(d["values"]) == 60 for d in trace["dimensions"])
    lines = list(
        zip(
            plot["trial_numbers"],
            plot["states"],
            plot["steps"],
            trace["line"]["color"],
            trace["dimensions"][-1]["values"],
        )
    )
    pruned = [line for line in lines if line[1] == "PRUNED"]
    assert len(pruned) == 54 and {line[2] for line in pruned} == {50, 100}
    near = set(plot["neighbourhood"])
    assert all(colour == 0.0 for number, _, _, colour, _ in pruned if number not in near)  # grey
    assert {colour for number, state, _, colour, _ in lines if number in near and state == "COMPLETE"} == {
        1.0
    }
    trial_1 = next(line for line in lines if line[0] == 1)
    assert 0.0 < trial_1[3] < 1.0  # pruned near the best: pink
    assert trial_1[4] == 1.0  # drawn at the value it was stopped at
    assert [line[1] for line in lines[:3]] == ["PRUNED"] * 3 and plot["trial_numbers"][-1] != 1
    ticks = trace["line"]["colorbar"]["ticktext"]
    assert "pruned" in ticks and "near best" in ticks
    assert "54 pruned" in plot["figure"]["layout"]["title"]["text"]

    only = httpx.get(
        f"{url}/studies/asha/plots/parallel-coordinates", params={"include": "complete"}, timeout=60
    ).json()
    assert set(only["states"]) == {"COMPLETE"} and len(only["trial_numbers"]) == 6
    assert set(only["steps"]) == {None} and "pruned" not in only["figure"]["layout"]["title"]["text"]


def test_importances_state_their_fidelity_and_intervals(asha):
    url, db_url = asha
    body = httpx.get(f"{url}/studies/asha/importances", timeout=120).json()
    # 3 hyperparameters: the rule asks for 2 (3 + 1) = 8 trials. The objective and steps 200, 150
    # have the 6 COMPLETE trials only; step 100 has them and the 15 trials stopped there.
    assert body["step"] == 100 and body["fidelity"]["kind"] == "step"
    assert body["n_trials"] == body["fidelity"]["n_trials"] == 21
    assert body["fidelity"]["n_complete"] == 6 and body["fidelity"]["n_pruned"] == 15
    assert body["bootstrap"]["resamples"] == importances.BOOTSTRAP_RESAMPLES
    assert body["bootstrap"]["seed"] == importances.BOOTSTRAP_SEED
    rows = body["importances"]
    assert {r["name"] for r in rows} == set(SPACE)
    assert rows[0]["name"] == "learning_rate"
    for row in rows:
        assert 0.0 <= row["ci_low"] <= row["importance"] <= row["ci_high"] <= 1.0
    assert sum(r["importance"] for r in rows) == pytest.approx(1.0)

    completed, pruned = _records(db_url, "asha")
    again = importances.with_intervals(importances.choose_fidelity(completed, pruned), "minimize")
    assert again["importances"] == rows  # deterministic under the seed, and the cached answer is it

    only = httpx.get(f"{url}/studies/asha/importances", params={"include": "complete"}, timeout=120).json()
    assert only["step"] is None and only["n_trials"] == 6 and only["fidelity"]["n_pruned"] == 0
    sens = httpx.get(f"{url}/studies/asha/sensitivity", timeout=60).json()
    assert sens["importance_fidelity"] == body["fidelity"]
    assert sens["importances"] == {r["name"]: r["importance"] for r in rows}


def test_a_driving_parameter_stands_clear_of_noise(tmp_path):
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    asha_study(db_url, "big", seed=1, n=120)
    completed, pruned = _records(db_url, "big")
    fidelity = importances.choose_fidelity(completed, pruned)
    assert fidelity.step is None and len(fidelity.trials) == 12  # 12 COMPLETE >= 8: the objective
    wider = importances.choose_fidelity(completed[:5], pruned)
    assert wider.step == 100 and len(wider.trials) == 5 + 29  # the best 5 and the 29 stopped at 100
    result = importances.with_intervals(wider, "minimize")
    assert result["n_trials"] == 34 and result["bootstrap"]["resample_size"] == 34
    rows = {r["name"]: r for r in result["importances"]}
    assert rows["learning_rate"]["ci_low"] > max(
        rows[n]["ci_high"] for n in ("input_dropout", "mogrifier_rounds")
    )
    assert result == importances.with_intervals(wider, "minimize")
    other = importances.with_intervals(wider, "minimize", seed=1)
    assert other["importances"] != result["importances"]  # the seed is what makes it repeatable
    assert [r["importance"] for r in other["importances"]] == [r["importance"] for r in result["importances"]]

    capped = importances.with_intervals(wider, "minimize", max_resample_size=20)  # m of n
    assert capped["bootstrap"]["resample_size"] == 20
    for name, row in ((r["name"], r) for r in capped["importances"]):
        assert row["ci_low"] <= row["importance"] == rows[name]["importance"] <= row["ci_high"]
    assert capped["importances"] != result["importances"]


def test_importances_single_out_the_hyperparameter_that_matters(tmp_path):
    rng = random.Random(0)
    trials = []
    for _ in range(60):
        params = {
            "learning_rate": math.exp(rng.uniform(math.log(0.001), math.log(0.004))),
            "input_dropout": rng.uniform(0.0, 0.9),
            "mogrifier_rounds": rng.randint(0, 10),
        }
        trials.append((params, TrialState.COMPLETE, final_value(params)))
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    make_study(db_url, "lr", tmp_path, trials=trials)
    completed, _ = _records(db_url, "lr")
    weights, note = importances.estimate(importances.choose_fidelity(completed, []), "minimize")
    assert note is None and weights["learning_rate"] > 0.8
    assert weights["learning_rate"] == max(weights.values())


def test_conditional_and_categorical_hyperparameters(tmp_path):
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    study = optuna.create_study(study_name="cond", storage=db_url)
    cell = CategoricalDistribution(["lstm", "mogrifier_lstm"])
    rounds = IntDistribution(0, 6)
    rate = FloatDistribution(0.001, 0.004, log=True)
    rows = [
        ({"cell": "mogrifier_lstm", "mogrifier_rounds": 3, "learning_rate": 0.002}, 4.0),  # best
        ({"cell": "mogrifier_lstm", "mogrifier_rounds": 3, "learning_rate": 0.0021}, 4.1),  # in
        ({"cell": "lstm", "learning_rate": 0.002}, 4.2),  # other cell, no rounds: out
        (
            {"cell": "mogrifier_lstm", "mogrifier_rounds": 5, "learning_rate": 0.002},
            4.3,
        ),  # 2 > 0.075 * 6: out
    ]
    for params, value in rows:
        dists = {
            "cell": cell,
            "learning_rate": rate,
            **({"mogrifier_rounds": rounds} if "mogrifier_rounds" in params else {}),
        }
        study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=value))
    completed, pruned = _records(db_url, "cond")
    result = sensitivity.analyse(completed, pruned, "minimize")
    assert [n["number"] for n in result["neighbours"]] == [1]
    assert result["windows"]["cell"]["window_low"] == "mogrifier_lstm"
    assert result["importances"] is not None and set(result["importances"]) >= {"learning_rate"}
    assert result["importance_fidelity"]["n_trials"] == 4
    assert sensitivity.analyse([], pruned, "minimize") is None
    few = importances.estimate(importances.choose_fidelity(completed[:3], []), "minimize")
    assert few[0] is None and "at least 4" in few[1]
    with_ci = importances.with_intervals(importances.choose_fidelity(completed, []), "minimize")
    assert {r["name"] for r in with_ci["importances"]} == {"cell", "learning_rate", "mogrifier_rounds"}
    assert all(r["ci_low"] <= r["importance"] <= r["ci_high"] for r in with_ci["importances"])


def test_a_conditional_parameter_keeps_its_axis_with_inactive_trials_at_off(tmp_path):
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    study = optuna.create_study(study_name="cond-plot", storage=db_url)
    rounds = IntDistribution(0, 6)
    rate = FloatDistribution(0.001, 0.004, log=True)
    rows = [
        ({"mogrifier_rounds": 3, "learning_rate": 0.002}, 4.0),
        ({"mogrifier_rounds": 5, "learning_rate": 0.003}, 4.1),
        ({"learning_rate": 0.0015}, 4.2),  # the parameter was inactive in this trial
    ]
    for params, value in rows:
        dists = {
            "learning_rate": rate,
            **({"mogrifier_rounds": rounds} if "mogrifier_rounds" in params else {}),
        }
        study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=value))
    with live_server(ApiSettings(db_url=db_url, storage_root=tmp_path)) as url:
        plot = httpx.get(f"{url}/studies/cond-plot/plots/parallel-coordinates", timeout=60).json()
    dims = {d["label"]: d for d in plot["figure"]["data"][0]["dimensions"]}
    assert set(dims) == {"mogrifier_rounds", "learning_rate (log)", "objective"}
    axis = dims["mogrifier_rounds"]
    assert axis["ticktext"][0] == "off" and axis["range"][0] == axis["tickvals"][0] < 0
    by_trial = dict(zip(plot["trial_numbers"], axis["values"]))
    assert by_trial[0] == 3 and by_trial[1] == 5 and by_trial[2] == axis["tickvals"][0]
    assert "off" not in (dims["learning_rate (log)"].get("ticktext") or [])
