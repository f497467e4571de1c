"""`--wandb-project`: W&B runs written in offline mode and read back from W&B's own transaction log
(wandb_records.py transcribes W&B's reader): one run per trial, grouped by study, its config the
trial's params, its history the curve at the training steps, its summary the value and ending,
its exit code the state; a W&B that fails never fails a trial; the field refused by name."""

from __future__ import annotations

import importlib.util

import pytest

from tests.tuner.sweeps.trackers.wandb_records import runs_in
from tuner.errors import InvalidInput
from tuner.spec import SweepSpec
from tuner.sweeps.trackers import installed
from tuner.sweeps.trackers.guard import Guard
from tuner.sweeps.trackers.records import Ending, Point
from tuner.sweeps.trackers.wandb_runs import DIRECTORY, WandbRuns


@pytest.fixture
def offline(monkeypatch):
    """W&B's own switch to local files only, as a user sets it (WANDB_MODE)."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")


def test_each_trial_is_a_run_of_the_project_grouped_by_study(tmp_path, offline):
    warnings: list[str] = []
    guard = Guard(WandbRuns("lm-sweeps", "ptb-1", tmp_path), warnings.append)
    guard.call("start_trial", 0, {"learning_rate": 0.002, "cell": "lstm", "mogrifier_rounds": None})
    guard.call("start_trial", 1, {"learning_rate": 0.003, "cell": "rlstm"})
    guard.call("start_trial", 2, {"learning_rate": 0.004, "cell": "lstm"})
    for step, base in ((10, 5.0), (20, 4.5)):
        for number in (0, 1, 2):
            guard.call("log", number, Point(step, {"val_loss": base + number, "lr": 0.002}))
    guard.call("end_trial", 0, Ending("COMPLETE", 4.5, "/s/ptb-1/trial-0/best.pt"))
    guard.call("end_trial", 1, Ending("FAIL", None, None, "diverged at step 20"))
    assert guard.close("stopped") == 0 and warnings == []  # trial 2 never ended: closed with the sweep

    runs = {run.name: run for run in runs_in(tmp_path / DIRECTORY)}
    assert sorted(runs) == ["trial-0", "trial-1", "trial-2"]
    assert {(r.project, r.group) for r in runs.values()} == {("lm-sweeps", "ptb-1")}
    first = runs["trial-0"]
    assert {k: first.config[k] for k in ("learning_rate", "cell", "rnntune.trial")} == {
        "learning_rate": 0.002,
        "cell": "lstm",
        "rnntune.trial": 0,
    }
    assert "mogrifier_rounds" not in first.config  # an inactive param is left out
    assert [(row["_step"], row["val_loss"]) for row in first.history] == [(10, 5.0), (20, 4.5)]
    assert (first.summary["value"], first.summary["state"], first.exit_code) == (4.5, "COMPLETE", 0)
    assert first.summary["checkpoint"] == "/s/ptb-1/trial-0/best.pt"
    failed = runs["trial-1"]
    assert (failed.summary["state"], failed.summary["error"], failed.exit_code) == (
        "FAIL",
        "diverged at step 20",
        1,
    )
    assert "value" not in failed.summary
    assert (runs["trial-2"].summary["state"], runs["trial-2"].exit_code) == ("sweep stopped", 1)


def test_a_w_and_b_that_fails_never_fails_a_trial(tmp_path, offline):
    """Its folder cannot be made (a file is in the way): the first failure is said once, every
    call after it is counted, and no call raises."""
    (tmp_path / DIRECTORY).write_text("in the way")
    warnings: list[str] = []
    guard = Guard(WandbRuns("lm-sweeps", "ptb-1", tmp_path), warnings.append)
    guard.call("start_trial", 0, {"learning_rate": 0.002})
    guard.call("log", 0, Point(10, {"val_loss": 5.0}))
    guard.call("end_trial", 0, Ending("COMPLETE", 5.0))
    assert guard.close("finished") == 5  # begin, then start, log, end and close, each counted
    assert len(warnings) == 1 and warnings[0].startswith("warning: wandb: ")


@pytest.mark.parametrize("project", ["a/b", "has space", "x" * 129, ""])
def test_a_project_w_and_b_would_refuse_is_refused_by_name(project):
    with pytest.raises(ValueError, match="wandb_project"):
        SweepSpec(wandb_project=project)
    assert SweepSpec(wandb_project="lm-sweeps_2.1").wandb_project == "lm-sweeps_2.1"


def test_without_the_client_the_field_is_refused_by_name(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        installed.importlib.util, "find_spec", lambda name: None if name == "wandb" else real(name)
    )
    with pytest.raises(InvalidInput, match=r"^wandb_project: needs the W&B client.*rnntune\[wandb\]"):
        installed.check_available(SweepSpec(wandb_project="lm-sweeps"))
