"""Study-level stop and checkpoint retention in a real sweep (real Ray, SQLite, the trainer)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS
from tuner.policies.study_stop import StudyStop
from tuner.spec import SweepSpec
from tuner.storage.study import StudyError, load_study
from tuner.sweeps.drive.run import run_sweep
from tuner.sweeps.drive.study_rules import StudyRules
from tuner.sweeps.study.create import create_study


def test_bad_policy_settings_name_the_field(tmp_path):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with pytest.raises(StudyError, match="patience: Input should be greater than or equal to 1"):
        create_study("a", storage_url=db, space="tiny", n_trials=3, patience=0)
    with pytest.raises(StudyError, match="keep_top: Input should be greater than or equal to 1"):
        create_study("b", storage_url=db, space="tiny", n_trials=3, keep_top=0)
    study = create_study("c", storage_url=db, space="tiny", n_trials=3, max_hours=2, keep_top=2)
    spec = SweepSpec.of(study.user_attrs)
    assert spec.study_stop().model_dump() == {
        "patience": None,
        "min_improvement": 0.0,
        "max_hours": 2.0,
        "budget": None,
        "budget_hours": None,
    }
    assert spec.keep_top == 2


def test_budget_counts_the_steps_of_this_run_of_the_sweep(tmp_path):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    study = create_study(
        "b",
        storage_url=db,
        space="tiny",
        n_trials=30,
        overrides={"set": {"max_steps": 100, "eval_every": 25}},
        budget=2,
    )

    def trial(last_step: int, state: TrialState) -> None:
        t = study.ask()
        for step in range(25, last_step + 1, 25):
            t.report(4.0 - step / 100, step)
        if state == TrialState.COMPLETE:
            study.tell(t, 3.0)
        elif state == TrialState.PRUNED:
            study.tell(t, state=TrialState.PRUNED)

    trial(100, TrialState.COMPLETE)
    trial(100, TrialState.COMPLETE)  # a budget's worth trained before this run started
    policies = StudyRules(study, tmp_path / "store", SweepSpec.of(study.user_attrs), max_steps=100)
    trial(100, TrialState.COMPLETE)
    trial(50, TrialState.PRUNED)
    assert policies.stop_reason() is None  # 150 of this run's 200 steps
    trial(25, TrialState.RUNNING)
    assert policies.stop_reason() is None
    trial(25, TrialState.RUNNING)  # a running trial's steps count up to its last report
    reason = policies.stop_reason()
    assert reason == "trained 200 steps, 2.0 full trials' worth (--budget 2 × 100 steps)"
    assert study.user_attrs["ended_early"] == reason


def test_budget_hours_counts_this_runs_compute_in_gpu_hours(tmp_path):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    study = create_study("h", storage_url=db, space="tiny", n_trials=30, budget_hours=1.0, gpus_per_trial=0.5)

    def trial(seconds: float | None, state: TrialState) -> None:
        t = study.ask()
        if seconds is not None:
            t.set_user_attr("wall_time_s", seconds)
        if state != TrialState.RUNNING:
            study.tell(t, 3.0 if state == TrialState.COMPLETE else None, state=state)

    trial(7200.0, TrialState.COMPLETE)  # before this run: not counted
    policies = StudyRules(study, tmp_path / "store", SweepSpec.of(study.user_attrs), max_steps=200)
    trial(3600.0, TrialState.COMPLETE)  # half a GPU for an hour: 0.5 GPU-hours
    trial(3000.0, TrialState.PRUNED)  # 0.42 more
    assert policies.stop_reason() is None
    trial(None, TrialState.RUNNING)  # running for a moment: not yet the last 0.08
    assert policies.stop_reason() is None
    trial(600.0, TrialState.FAIL)  # a failed attempt's compute counts too
    reason = policies.stop_reason()
    assert reason is not None and reason.startswith("used 1 compute hours (--budget-hours 1)")
    assert study.user_attrs["ended_early"] == reason


@pytest.mark.slow
def test_budget_hours_ends_the_sweep_within_one_trials_length(tmp_path, ray_cluster):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    budget_s = 12.0  # a few trials' worth of compute on two CPU cores
    create_study(
        "hours",
        storage_url=db,
        space="tiny",
        n_trials=40,
        parallel=2,
        scheduler="none",
        storage_path=tmp_path / "store",
        overrides={"set": {**TINY_SETTINGS, "max_steps": 20}},
        seed=0,
        budget_hours=budget_s / 3600,
    )
    outcome = run_sweep("hours", db, num_cpus=2, out=io.StringIO())
    study = load_study("hours", db)
    walls = [t.user_attrs["wall_time_s"] for t in study.trials]
    assert outcome.status == "finished" and outcome.ended_early
    assert "--budget-hours" in outcome.ended_early and len(study.trials) < 40
    assert sum(walls) >= budget_s  # it ran until the budget was spent...
    # ...and then only the trials already in flight finished: at most one trial's length per slot.
    assert sum(walls) - budget_s <= 2 * max(walls), walls
    complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert complete and all(t.user_attrs["seconds_per_step"] > 0 for t in complete)


@pytest.mark.slow
def test_patience_ends_the_sweep_and_only_the_best_weights_are_kept(tmp_path, ray_cluster):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    # No trial can beat the first by 10 nats: after it, `patience` finished trials end the sweep.
    create_study(
        "plateau",
        storage_url=db,
        space="tiny",
        n_trials=12,
        parallel=2,
        scheduler="none",
        storage_path=tmp_path / "store",
        overrides={"set": {**TINY_SETTINGS, "max_steps": 20}},
        seed=0,
        patience=2,
        min_improvement=10.0,
        keep_top=1,
    )
    outcome = run_sweep("plateau", db, num_cpus=2, out=io.StringIO())
    study = load_study("plateau", db)
    complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert outcome.status == "finished" and study.user_attrs["status"] == "finished"
    assert 3 <= outcome.finished < 12  # the first, then 2 that did not improve, plus those in flight
    assert outcome.ended_early and "in 2 trials (--patience 2)" in outcome.ended_early
    assert study.user_attrs["ended_early"] == outcome.ended_early
    assert not [t for t in study.trials if t.state == TrialState.RUNNING]

    best = min(complete, key=lambda t: t.value)
    for trial in complete:
        run_dir = Path(trial.user_attrs["run_dir"])
        assert (run_dir / "config.yaml").is_file() and (run_dir / "metrics.jsonl").is_file()
        assert (run_dir / "best.pt").is_file() == (trial.number == best.number)
    assert Path(best.user_attrs["checkpoint"]).is_file()
    assert study.user_attrs["checkpoints_removed"] == len(complete) - 1
    used = sum(
        f.stat().st_size
        for t in study.trials
        for f in Path(t.user_attrs["run_dir"]).rglob("*")
        if f.is_file()
    )
    assert study.user_attrs["checkpoint_bytes"] <= used + 1  # recorded after the last trial finished


def test_stop_rules_may_change_on_resume_within_their_ranges(tmp_path, capsys):
    from tuner.cli import main

    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    create_study("r", storage_url=db, space="tiny", n_trials=3, storage_path=tmp_path / "r")
    for flag, value, problem in (
        ("--budget", "0", "budget: Input should be greater than 0"),
        ("--patience", "0", "patience: Input should be greater than or equal to 1"),
        ("--max-hours", "-1", "max_hours: Input should be greater than 0"),
    ):
        assert main(["sweep", "--resume", "r", "--db", db, flag, value]) == 2
        assert problem in capsys.readouterr().err
    assert SweepSpec.of(load_study("r", db).user_attrs).study_stop() == StudyStop()  # nothing stored
    assert main(["sweep", "--db", db, "--name", "s", "--budget", "0"]) == 2
    assert "budget: Input should be greater than 0" in capsys.readouterr().err
