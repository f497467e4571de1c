"""`rnntune report`: the terminal view of a study's importances, alerts and policies, with the
same numbers the API serves."""

from __future__ import annotations

import json

import httpx
from optuna.trial import TrialState

from tests.tuner.api.fixtures import EDGE_SPACE, live_server, make_edge_study, make_study
from tuner.api import ApiSettings
from tuner.cli import main


def test_report_prints_importances_alerts_and_the_widen_command(tmp_path, capsys):
    db_url = f"sqlite:///{tmp_path / 'edgy.db'}"
    make_edge_study(db_url, "edgy", tmp_path / "edgy")
    assert main(["report", "edgy", "--db", db_url]) == 0
    text = capsys.readouterr().out
    assert text.startswith("study edgy: ") and "10 complete" in text
    assert "importances (ped_anova, 10 trials at the objective, 90% bootstrap intervals):" in text
    assert "3 of the 3 best trials have learning_rate within 5% of its low bound 0.001" in text
    assert "rnntune sweep --resume edgy --widen learning_rate:low" in text

    assert main(["report", "edgy", "--db", db_url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    with live_server(ApiSettings(db_url=db_url, storage_root=tmp_path)) as url:
        served = httpx.get(f"{url}/studies/edgy/importances", timeout=60).json()
        alerts = httpx.get(f"{url}/studies/edgy/boundaries", timeout=60).json()["alerts"]
    assert report["importances"]["importances"] == served["importances"]  # one computation, two views
    assert report["importances"]["n_trials"] == served["n_trials"] == 10
    assert [{k: v for k, v in a.items() if k != "widen_error"} for a in report["alerts"]] == alerts
    assert [a["widen_error"] for a in report["alerts"]] == [None]


def test_an_edge_at_the_trainers_limit_gets_the_reason_not_the_widen_command(tmp_path, capsys):
    db_url = f"sqlite:///{tmp_path / 'floor.db'}"
    trials = [
        ({"learning_rate": 0.002, "input_dropout": 0.001 * i if i < 3 else 0.1 * i, "mogrifier_rounds": 2},
         TrialState.COMPLETE, 4.0 + 0.1 * i)
        for i in range(10)
    ]  # fmt: skip
    make_study(db_url, "floor", tmp_path / "floor", trials=trials).set_user_attr(
        "space_def", {"name": "floor", "params": EDGE_SPACE}
    )
    assert main(["report", "floor", "--db", db_url]) == 0
    text = capsys.readouterr().out
    assert "have input_dropout within 5% of its low bound 0" in text
    assert (
        "cannot search beyond it: parameter input_dropout: its low bound 0 is already at the trainer's limit"
        in text
    )
    assert "--widen input_dropout:low" not in text


def test_unknown_study_is_exit_2(tmp_path, capsys):
    db_url = f"sqlite:///{tmp_path / 'none.db'}"
    assert main(["report", "nope", "--db", db_url]) == 2
    assert "no study named 'nope'" in capsys.readouterr().err


def test_report_prints_the_front_of_a_study_with_several_objectives(tmp_path, capsys):
    from tests.tuner.api.fixtures import MO_FRONT, make_mo_study

    db_url = f"sqlite:///{tmp_path / 'mo.db'}"
    make_mo_study(db_url, "mo", tmp_path / "mo")
    assert main(["report", "mo", "--db", db_url]) == 0
    text = capsys.readouterr().out
    assert (
        "Pareto front of val_loss (minimize), num_params (minimize) under num_params<=5000: 3 trials "
        "(1 dominated, 1 infeasible)" in text
    )
    rows = [line.split() for line in text.splitlines() if line.startswith("  #")]
    assert [int(r[0][1:]) for r in rows] == MO_FRONT and rows[0][1:] == ["3.9", "4800"]
    assert main(["report", "mo", "--db", db_url, "--json"]) == 0
    with live_server(ApiSettings(db_url=db_url, storage_root=tmp_path)) as url:
        served = httpx.get(f"{url}/studies/mo/pareto", timeout=60).json()
    front = json.loads(capsys.readouterr().out)["front"]
    assert [p["number"] for p in front["front"]] == served["front"]
