"""`GET /studies/{name}/boundaries` over HTTP: alerts when the best trials crowd a range's edge."""

from __future__ import annotations

import httpx
from optuna.trial import TrialState

from tests.tuner.api.fixtures import live_server, make_study
from tuner.api import ApiSettings


def test_alert_names_the_parameter_and_the_edge(tmp_path):
    # learning_rate 0.001..0.004 (log): the best trials sit at its low bound.
    trials = [
        (
            {
                "learning_rate": 0.00101 + 0.0003 * i,
                "input_dropout": 0.1 * (i % 9),
                "mogrifier_rounds": i % 7,
            },
            TrialState.COMPLETE,
            4.0 + 0.1 * i,
        )
        for i in range(10)
    ]
    trials[1] = (
        {"learning_rate": 0.00102, "input_dropout": 0.5, "mogrifier_rounds": 3},
        TrialState.COMPLETE,
        4.05,
    )
    trials[2] = (
        {"learning_rate": 0.00103, "input_dropout": 0.2, "mogrifier_rounds": 1},
        TrialState.COMPLETE,
        4.07,
    )
    db_url = f"sqlite:///{tmp_path / 'edgy.db'}"
    study = make_study(db_url, "edgy", tmp_path / "edgy", trials=trials)
    study.set_user_attr(
        "space_def",
        {
            "name": "edgy",
            "params": {
                "learning_rate": {"scale": "log", "low": 0.001, "high": 0.004},
                "input_dropout": {"scale": "linear", "low": 0.0, "high": 0.9},
                "mogrifier_rounds": {"scale": "int", "low": 0, "high": 10},
            },
        },
    )
    with live_server(ApiSettings(db_url=db_url, storage_root=tmp_path)) as server:
        r = httpx.get(f"{server}/studies/edgy/boundaries")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["n_complete"] == 10
    assert [(a["param"], a["edge"], a["bound"]) for a in body["alerts"]] == [("learning_rate", "low", 0.001)]
    assert "3 of the 3 best trials" in body["alerts"][0]["message"]


def test_no_alerts_without_a_stored_space_and_404_for_unknown(server):
    r = httpx.get(f"{server}/studies/fixed/boundaries")
    assert r.status_code == 200 and r.json()["alerts"] == []
    assert httpx.get(f"{server}/studies/nope/boundaries").status_code == 404
