"""End-to-end sweeps as separate processes: real Ray, real SQLite and PostgreSQL, crashes and signals."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from optuna.trial import TrialState

from tests.tuner.sweep_checks import check_trials
from tests.tuner.sweep_process import count, finish, launch, loads_torch, tiny_set_args, trials, wait_until
from tuner.policies.rank_agreement import MIN_PAIRS
from tuner.storage.study import finished_count, load_study

pytestmark = pytest.mark.slow


def test_sqlite_sweep_of_eight_trials_two_at_a_time_stopped_by_sigterm_then_resumed(tmp_path, joined_ray):
    """The CLI's sweep, stop and resume in one study: eight trials two at a time under the default
    scheduler, SIGTERM once a trial has completed while another runs (a clean stop that names the
    resume command), then `--resume` to the end."""
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    args = ["--name", "e2e", "--trials", "8", "--parallel", "2", "--db", db, "--seed", "1"]
    proc, log = launch(tmp_path, [*args, *tiny_set_args(max_steps=60)], env=joined_ray)
    wait_until(
        lambda: (lambda ts: count(ts, TrialState.COMPLETE) >= 1 and count(ts, TrialState.RUNNING) >= 1)(
            trials(db, "e2e")
        ),
        proc,
        log,
        300,
    )
    assert loads_torch(proc.pid)  # the default sampler, a GP, runs on PyTorch in the driver
    proc.send_signal(signal.SIGTERM)
    assert finish(proc, log, 120) == 130, log.read_text()
    out = log.read_text()
    assert "resume with: rnntune sweep --resume e2e" in out
    assert "Configuration for experiment" not in out  # Ray's own tables stay quiet
    assert "scheduler adaptive" in out and "adaptive: a rung prunes once" in out
    study = load_study("e2e", db)
    assert study.user_attrs["status"] == "stopped"
    ts = study.get_trials()
    assert count(ts, TrialState.RUNNING) == 0
    interrupted = [t for t in ts if t.state == TrialState.FAIL]
    # Trials that ran were interrupted; the ones the driver had asked ahead never started.
    reasons = {t.user_attrs["error"] for t in interrupted}
    assert "interrupted: sweep stopped by SIGTERM" in reasons, reasons
    assert reasons <= {"interrupted: sweep stopped by SIGTERM", "not started: sweep stopped by SIGTERM"}
    assert all(t.user_attrs["needs_retry"] for t in interrupted)

    proc, log = launch(tmp_path, ["--resume", "e2e", "--db", db], env=joined_ray)
    assert finish(proc, log, 600) == 0, log.read_text()
    assert "study e2e: finished, 8/8 trials" in log.read_text()
    study = load_study("e2e", db)
    assert finished_count(study) == 8 and study.user_attrs["status"] == "finished"
    assert {t.user_attrs.get("retry_of") for t in study.trials} >= {t.number for t in interrupted}
    check_trials(study)
    # The default scheduler, adaptive ASHA, prunes at no rung before MIN_PAIRS trials calibrated it.
    ended = sorted((t for t in study.trials if t.state != TrialState.FAIL), key=lambda t: t.datetime_complete)
    assert [t.state for t in ended[:MIN_PAIRS]] == [TrialState.COMPLETE] * MIN_PAIRS
    best = study.best_trial
    assert Path(best.user_attrs["checkpoint"]).is_file()
    assert (tmp_path / "studies" / "e2e" / f"trial-{best.number}" / "best.pt").is_file()
