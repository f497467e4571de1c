"""Widening a stored study's range (`tuner.sweeps.widen.ranges`) and `rnntune sweep --resume NAME --widen PARAM`
on a real SQLite study, decided before any trial runs."""

from __future__ import annotations

import pytest

from tests.tuner.edge_study import edge_study
from tuner.cli import main
from tuner.storage.attrs import set_study_attrs
from tuner.storage.study import StudyError, load_study, open_storage
from tuner.sweeps.widen.ranges import parse_widen, plan_widening


def widen_study(db: str, study, param: str, edge: str | None = None) -> dict:
    """Plan one widening and store it, as the CLI and the API do; the change."""
    attrs, (change,) = plan_widening(study, [(param, edge)])
    set_study_attrs(open_storage(db), study.study_name, attrs)
    return change


def test_widening_stores_the_wider_space_and_its_history(tmp_path):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    study = edge_study(db, "edgy", tmp_path)
    before = [(t.number, t.params, t.value) for t in study.trials]
    change = widen_study(db, study, "learning_rate")  # the alert names the low edge
    assert change["edge"] == "low" and change["old"] == [0.001, 0.004] and change["new"] == [0.0005, 0.004]
    again = load_study("edgy", db)
    assert again.user_attrs["space_def"]["params"]["learning_rate"]["low"] == 0.0005
    assert again.user_attrs["widened"] == [change] and change["trials_before"] == 10
    widen_study(db, again, "mogrifier_rank", "high")
    history = load_study("edgy", db).user_attrs["widened"]
    assert [(h["param"], h["edge"]) for h in history] == [
        ("learning_rate", "low"),
        ("mogrifier_rank", "high"),
    ]
    assert [(t.number, t.params, t.value) for t in load_study("edgy", db).trials] == before


def test_a_parameter_without_an_alert_needs_an_edge(tmp_path):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    study = edge_study(db, "edgy", tmp_path)
    with pytest.raises(
        StudyError, match=r"parameter l2_penalty: study 'edgy' has no boundary alert for it; name"
    ):
        plan_widening(study, [("learning_rate", None), ("l2_penalty", None)])
    assert "widened" not in load_study("edgy", db).user_attrs
    assert parse_widen("l2_penalty:both") == ("l2_penalty", "both")
    assert parse_widen("l2_penalty") == ("l2_penalty", None)
    with pytest.raises(
        StudyError, match=r"--widen expects PARAM or PARAM:low\|high\|both, got 'l2_penalty:up'"
    ):
        parse_widen("l2_penalty:up")


def test_cli_widens_a_finished_study_and_says_how_to_continue(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    edge_study(db, "edgy", tmp_path)
    code = main(
        ["sweep", "--resume", "edgy", "--db", db, "--widen", "learning_rate", "--widen", "l2_penalty:high"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "widened learning_rate (low): [0.001, 0.004] -> [0.0005, 0.004]" in out
    assert "widened l2_penalty (high): [5e-06, 0.001] -> [5e-06, 0.0141421]" in out
    assert "sample from the widened range with rnntune sweep --resume edgy --trials M (M > 10)" in out
    study = load_study("edgy", db)
    assert len(study.trials) == 10 and study.user_attrs["status"] == "finished"
    assert [w["param"] for w in study.user_attrs["widened"]] == ["learning_rate", "l2_penalty"]


def test_cli_widen_errors_exit_2_and_change_nothing(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    edge_study(db, "edgy", tmp_path)
    assert main(["sweep", "--db", db, "--widen", "learning_rate"]) == 2
    assert (
        "--widen: widens the range of an existing study; use it with --resume NAME" in capsys.readouterr().err
    )
    assert main(["sweep", "--resume", "edgy", "--db", db, "--widen", "hidden_size:high"]) == 2
    assert "parameter hidden_size: not tuned by space tiny" in capsys.readouterr().err
    assert main(["sweep", "--resume", "edgy", "--db", db, "--widen", "input_dropout"]) == 2
    assert "parameter input_dropout: study 'edgy' has no boundary alert" in capsys.readouterr().err
    assert main(["sweep", "--resume", "edgy", "--db", db, "--widen", "input_dropout:low"]) == 2
    assert "input_dropout: its low bound 0 is already at the trainer's limit" in capsys.readouterr().err
    assert "widened" not in load_study("edgy", db).user_attrs
