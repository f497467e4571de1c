"""End-to-end sweeps as separate processes: real Ray, real SQLite and PostgreSQL, crashes and signals."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from optuna.trial import TrialState

from tests.tuner.sweep_checks import check_trials
from tests.tuner.sweep_process import count, finish, launch, tiny_set_args, trials, wait_until
from tuner.policies.rank_agreement import MIN_PAIRS
from tuner.storage.study import finished_count, load_study

pytestmark = pytest.mark.slow


def test_sqlite_sweep_of_eight_trials_two_at_a_time(tmp_path):
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    proc, log = launch(
        tmp_path,
        ["--name", "e2e", "--trials", "8", "--parallel", "2", "--db", db, "--seed", "1", *tiny_set_args()],
    )
    assert finish(proc, log, 600) == 0, log.read_text()
    out = log.read_text()
    assert "done 8/8" in out and "study e2e: finished, 8/8 trials" in out
    assert "Configuration for experiment" not in out  # Ray's own tables stay quiet
    study = load_study("e2e", db)
    assert len(study.trials) == 8 and study.user_attrs["status"] == "finished"
    check_trials(study)
    # The default scheduler, adaptive ASHA, prunes at no rung before MIN_PAIRS trials calibrated it.
    assert "scheduler adaptive" in out and "adaptive: a rung prunes once" in out
    assert [t.state for t in study.trials[:MIN_PAIRS]] == [TrialState.COMPLETE] * MIN_PAIRS
    assert Path(study.best_trial.user_attrs["checkpoint"]).is_file()
    assert (tmp_path / "studies" / "e2e" / f"trial-{study.best_trial.number}" / "best.pt").is_file()


def test_sigterm_stops_cleanly_then_resume_finishes(tmp_path):
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    proc, log = launch(
        tmp_path,
        [
            "--name",
            "term",
            "--trials",
            "6",
            "--parallel",
            "2",
            "--scheduler",
            "none",
            "--db",
            db,
            *tiny_set_args(max_steps=80),
        ],
    )
    wait_until(
        lambda: (lambda ts: count(ts, TrialState.COMPLETE) >= 1 and count(ts, TrialState.RUNNING) >= 1)(
            trials(db, "term")
        ),
        proc,
        log,
        300,
    )
    proc.send_signal(signal.SIGTERM)
    assert finish(proc, log, 120) == 130, log.read_text()
    assert "resume with: rnntune sweep --resume term" in log.read_text()
    study = load_study("term", db)
    assert study.user_attrs["status"] == "stopped"
    ts = study.get_trials()
    assert count(ts, TrialState.RUNNING) == 0
    interrupted = [t for t in ts if t.state == TrialState.FAIL]
    # Trials that ran were interrupted; the ones the driver had asked ahead never started.
    reasons = {t.user_attrs["error"] for t in interrupted}
    assert "interrupted: sweep stopped by SIGTERM" in reasons, reasons
    assert reasons <= {"interrupted: sweep stopped by SIGTERM", "not started: sweep stopped by SIGTERM"}
    assert all(t.user_attrs["needs_retry"] for t in interrupted)

    proc, log = launch(tmp_path, ["--resume", "term", "--db", db])
    assert finish(proc, log, 600) == 0, log.read_text()
    study = load_study("term", db)
    assert finished_count(study) == 6 and study.user_attrs["status"] == "finished"
    assert {t.user_attrs.get("retry_of") for t in study.trials} >= {t.number for t in interrupted}
    check_trials(study)
