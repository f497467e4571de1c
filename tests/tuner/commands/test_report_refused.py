"""`rnntune report` of a study with settings refused before training for its bound: they count
among the infeasible points, and the line says how many were never trained."""

from __future__ import annotations

import json

import optuna

from tests.tuner.api.fixtures import make_mo_study
from tuner.cli import main
from tuner.objectives.goals import Goals
from tuner.sweeps.drive.writer import StudyWriter


def test_report_counts_refused_settings_as_infeasible(tmp_path, capsys):
    db_url = f"sqlite:///{tmp_path / 'mo.db'}"
    make_mo_study(db_url, "mo", tmp_path / "mo")
    study = optuna.load_study(study_name="mo", storage=db_url)
    writer = StudyWriter(study, goals=Goals.parse(["val_loss", "num_params"], ["num_params<=5000"]))
    for size in (9000.0, 12000.0):
        writer.refuse(study.ask(), {"num_params": size}, f"num_params={size:.4g} (bound num_params<=5000)")
    assert main(["report", "mo", "--db", db_url]) == 0
    assert "(1 dominated, 3 infeasible, 2 of them refused before training)" in capsys.readouterr().out
    assert main(["report", "mo", "--db", db_url, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["front"]
    assert (found["infeasible"], found["refused"]) == (3, 2)
