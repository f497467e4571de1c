"""End-to-end sweeps as separate processes: real Ray, real SQLite and PostgreSQL, crashes and signals."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from optuna.trial import TrialState

from tests.tuner.sweep_checks import check_trials
from tests.tuner.sweep_process import count, finish, launch, snapshot, tiny_set_args, trials, wait_until
from tuner.policies.rank_agreement import MIN_PAIRS
from tuner.storage.study import finished_count, load_study
from tuner.sweeps.sweep import ZOMBIE_REASON

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


def test_killed_sweep_resumes_without_losing_or_rerunning_trials(tmp_path):
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    args = [
        "--trials",
        "8",
        "--parallel",
        "2",
        "--scheduler",
        "none",
        "--sampler",
        "random",
        "--seed",
        "2",
        "--db",
        db,
        *tiny_set_args(max_steps=80),
    ]
    proc, log = launch(tmp_path, ["--name", "crash", *args])
    wait_until(
        lambda: (lambda ts: count(ts, TrialState.COMPLETE) >= 2 and count(ts, TrialState.RUNNING) >= 1)(
            trials(db, "crash")
        ),
        proc,
        log,
        300,
    )
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    before = trials(db, "crash")
    done_before = snapshot(before)
    zombies = [t.number for t in before if t.state == TrialState.RUNNING]
    assert zombies and len(done_before) >= 2

    proc, log = launch(tmp_path, ["--resume", "crash", "--db", db])
    assert finish(proc, log, 600) == 0, log.read_text()
    study = load_study("crash", db)
    after = study.get_trials()
    assert {n: v for n, v in snapshot(after).items() if n in done_before} == done_before
    assert finished_count(study) == 8 and study.user_attrs["status"] == "finished"
    retried = {t.user_attrs.get("retry_of"): t for t in after if t.user_attrs.get("retry_of") is not None}
    for n in zombies:
        dead = after[n]
        assert dead.state == TrialState.FAIL and dead.user_attrs["error"] == ZOMBIE_REASON
        assert dead.user_attrs["needs_retry"] is True
        retry = retried[n]
        # The retry reruns what the dead trial stored; a kill while its parameters were being
        # suggested leaves only some stored, and the retry draws the rest.
        assert dead.params.items() <= retry.params.items()
        assert retry.state in (TrialState.COMPLETE, TrialState.PRUNED)
    check_trials(study)


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


def test_dead_worker_is_failed_and_retried_as_a_linked_trial(tmp_path):
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    proc, log = launch(
        tmp_path,
        [
            "--name",
            "worker",
            "--trials",
            "3",
            "--parallel",
            "1",
            "--scheduler",
            "none",
            "--db",
            db,
            *tiny_set_args(max_steps=120),
        ],
    )

    def running_with_pid():
        return [t for t in trials(db, "worker") if t.state == TrialState.RUNNING and t.user_attrs.get("pid")]

    wait_until(lambda: bool(running_with_pid()), proc, log, 300)
    victim = running_with_pid()[0]
    os.kill(int(victim.user_attrs["pid"]), signal.SIGKILL)
    assert finish(proc, log, 600) == 0, log.read_text()
    study = load_study("worker", db)
    dead = study.trials[victim.number]
    assert dead.state == TrialState.FAIL and dead.user_attrs["needs_retry"] is True
    assert dead.user_attrs["error"].startswith("worker failed: ") and "retrying" in dead.user_attrs["error"]
    retry = next(t for t in study.trials if t.user_attrs.get("retry_of") == victim.number)
    assert retry.params == dead.params and retry.state in (TrialState.COMPLETE, TrialState.PRUNED)
    assert finished_count(study) == 3
    check_trials(study)


def test_postgres_sweep_keeps_the_password_out_of_files_and_output(tmp_path, postgres_url):
    password = postgres_url.split(":")[2].split("@")[0]
    proc, log = launch(
        tmp_path,
        [
            "--name",
            "pg",
            "--trials",
            "8",
            "--parallel",
            "2",
            "--storage",
            str(tmp_path / "store"),
            *tiny_set_args(),
        ],
        env={"RNNTUNE_DB_URL": postgres_url},
    )
    assert finish(proc, log, 600) == 0, log.read_text()
    out = log.read_text()
    assert "study pg: finished, 8/8 trials" in out and password not in out and "***" in out
    study = load_study("pg", postgres_url)
    assert len(study.trials) == 8
    check_trials(study)
    for path in (tmp_path / "store").rglob("*"):
        if path.is_file():
            assert password.encode() not in path.read_bytes(), f"password written to {path}"
