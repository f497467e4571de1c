"""SQL studies: unique names, the contract's attrs, status and zombie bookkeeping (real SQLite)."""

from __future__ import annotations

import re

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState

from tuner.space import load_space
from tuner.spec import SweepSpec
from tuner.storage.study import (
    StudyError,
    StudyExistsError,
    StudyNotFoundError,
    best_trial,
    fail_zombies,
    finished_count,
    finished_curves,
    generate_study_name,
    load_study,
    open_storage,
    pending_retries,
    redact_url,
    resolve_db_url,
    set_status,
)
from tuner.sweeps.study.create import create_study


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'studies.db'}"


def make(db, name="s1", **kw):
    args = dict(storage_url=db, space="tiny", sampler="tpe", n_trials=4, parallel=2, scheduler="asha")
    args.update(kw)
    return create_study(name, **args)


def test_created_study_holds_the_contract_attrs(db, tmp_path):
    study = make(
        db,
        storage_path=tmp_path / "ckpt",
        overrides={"set": {"max_steps": 50}, "ranges": {"learning_rate": "0.001:0.002"}},
        seed=3,
    )
    attrs = load_study("s1", db).user_attrs
    spec = SweepSpec.of(attrs)
    assert attrs["space"] == "tiny" and spec.sampler == "tpe" and spec.scheduler == "asha"
    assert spec.n_trials == 4 and spec.parallel == 2 and spec.seed == 3
    # stored resolved: 4 trials expect < 3 COMPLETE under a rung at 25 (the small-study rule), so
    # the grace period is max_steps 50
    assert attrs["spec"]["version"] == 1 and attrs["spec"]["grace_steps"] == 50
    assert attrs["status"] == "created"
    assert attrs["storage_path"] == str((tmp_path / "ckpt").resolve())
    assert attrs["task"]["max_steps"] == 50 and attrs["task"]["dataset"] == "builtin"
    assert attrs["space_def"]["params"]["learning_rate"] == {"scale": "log", "low": 0.001, "high": 0.002}
    assert re.match(r"\d{4}-\d\d-\d\dT", attrs["created_at"])
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    assert len(study.trials) == 0


def test_names_are_unique_and_never_optunas_default(db):
    make(db)
    with pytest.raises(StudyExistsError, match=r"study 's1' already exists.*--resume s1"):
        make(db)
    generated = make(db, name=None).study_name
    assert re.fullmatch(r"tiny-\d{8}-\d{4}-[0-9a-f]{4}", generated)
    assert not generated.startswith("no-name")
    assert generate_study_name("tiny") != generate_study_name("tiny")


def test_bad_settings_are_refused(db):
    with pytest.raises(StudyError, match=r"sampler: Input should be 'gp'.*got 'bayes'"):
        make(db, sampler="bayes")
    with pytest.raises(
        StudyError,
        match="scheduler: Input should be 'adaptive', 'asha', 'median', 'none', 'hyperband', 'pbt' or 'pb2'",
    ):
        make(db, scheduler="bohb")
    with pytest.raises(StudyError, match="n_trials: Input should be greater than or equal to 1"):
        make(db, n_trials=0)
    with pytest.raises(StudyError, match=r"overrides\.fixed: Extra inputs are not permitted"):
        make(db, overrides={"fixed": {}})
    with pytest.raises(StudyError, match="gpus_per_trial: Value error, above 1 must be a whole number"):
        make(db, gpus_per_trial=1.5)
    # Found by the schema fuzz: math.isclose called this whole; the schema's `multipleOf: 1` does not.
    with pytest.raises(StudyError, match="gpus_per_trial: Value error, above 1 must be a whole number"):
        make(db, gpus_per_trial=1.0000000000000004)


def test_load_missing_study_names_the_storage(db):
    with pytest.raises(StudyNotFoundError, match="no study named 'ghost'"):
        load_study("ghost", db)


def test_zombies_fail_with_reason_and_await_retry(db):
    study = make(db)
    done = study.ask()
    study.tell(done, 1.0)
    pruned = study.ask()
    pruned.report(2.0, 10)
    study.tell(pruned, state=TrialState.PRUNED)
    zombie = study.ask()
    zombie.report(3.0, 10)
    assert fail_zombies(study, "driver died", db) == [zombie.number]
    frozen = study.trials[zombie.number]
    assert frozen.state == TrialState.FAIL and frozen.user_attrs["error"] == "driver died"
    assert [t.number for t in pending_retries(study)] == [zombie.number]
    assert finished_count(study) == 2  # the zombie does not use up a trial
    retry = study.ask()
    retry.set_user_attr("retry_of", zombie.number)
    assert pending_retries(study) == []
    assert best_trial(study).number == done.number  # PRUNED (value 2.0 recorded) is never best


def test_pruned_trial_is_never_best_even_when_lower(db):
    study = make(db)
    t = study.ask()
    study.tell(t, 5.0)
    p = study.ask()
    p.report(0.1, 10)
    study.tell(p, state=TrialState.PRUNED)
    assert best_trial(study).number == t.number
    assert study.best_trial.number == t.number


def test_finished_curves_are_the_complete_and_pruned_trials_values(db):
    """What a resumed sweep's adaptive scheduler starts from: finished trials only."""
    study = make(db)
    done, pruned, failed, running = (study.ask() for _ in range(4))
    for trial, values in ((done, (3.0, 2.0)), (pruned, (4.0,)), (failed, (1.0,)), (running, (0.5,))):
        for i, value in enumerate(values):
            trial.report(value, 50 * (i + 1))
    study.tell(done, 2.0)
    study.tell(pruned, state=TrialState.PRUNED)
    study.tell(failed, state=TrialState.FAIL)
    assert finished_curves(study) == {
        f"study-{done.number}": {50: 3.0, 100: 2.0},
        f"study-{pruned.number}": {50: 4.0},
    }


def test_status_values_are_checked(db):
    study = make(db)
    set_status(study, "running")
    assert load_study("s1", db).user_attrs["status"] == "running"
    with pytest.raises(StudyError, match="status must be one of"):
        set_status(study, "paused")


def test_urls_are_redacted_and_defaulted(tmp_path, monkeypatch):
    assert (
        redact_url("postgresql+psycopg2://me:hunter2@db:5432/x") == "postgresql+psycopg2://me:***@db:5432/x"
    )
    monkeypatch.delenv("RNNTUNE_DB_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert resolve_db_url() == f"sqlite:///{tmp_path / 'studies' / 'rnntune.db'}"
    monkeypatch.setenv("RNNTUNE_DB_URL", "sqlite:///other.db")
    assert resolve_db_url() == "sqlite:///other.db"
    assert resolve_db_url("sqlite:///given.db") == "sqlite:///given.db"


def test_optuna_checks_a_databases_schema_once_per_process(db, tmp_path):
    """Optuna refuses a schema it does not know on the first open (its own check, run for real);
    a later open of that URL in the same process skips the check, which reloads every Alembic
    script. rnntune's writes still check the version themselves (test_attrs.py)."""
    make(db)
    engine = sqlalchemy.create_engine(db)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("UPDATE alembic_version SET version_num = 'v9.9.9'"))
    engine.dispose()
    with pytest.raises(StudyError, match=r"cannot open study database .*no longer compatible"):
        open_storage(f"sqlite:///{tmp_path}/./studies.db")  # the same file, a URL not checked yet
    assert open_storage(db).get_current_version() == "v9.9.9"  # `make` opened it: not checked again


def test_create_study_accepts_a_space_object(db):
    study = make(db, name="obj", space=load_space("tiny").with_overrides(fixed={"cell": "lstm"}))
    assert "mogrifier_rounds" not in study.user_attrs["space_def"]["params"]


@pytest.mark.parametrize("name", ["../../zz", "a/b", ".x", "with space", "x" * 129])
def test_study_names_are_safe_for_paths(db, name):
    """A study name becomes a storage folder: `rnntune sweep --name ../x` must not escape it."""
    with pytest.raises(StudyError, match="must be 1-128 letters, digits"):
        make(db, name=name)
    assert optuna.get_all_study_names(db) == []
