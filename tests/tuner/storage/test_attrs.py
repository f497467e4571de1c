"""Several study attributes written in one transaction (`tuner.storage.attrs`) on a real SQLite
study: all of them, or none when the transaction fails half-way."""

from __future__ import annotations

import optuna
import pytest
import sqlalchemy
from sqlalchemy import event

from tuner.errors import StudyError
from tuner.storage import study_attrs
from tuner.storage.attrs import set_study_attrs
from tuner.storage.study import open_storage


@pytest.fixture
def storage(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path / 'db.sqlite'}")
    study = optuna.create_study(study_name="s", storage=storage)
    study.set_user_attr(study_attrs.TASK, {"a": 1})
    study.set_user_attr(study_attrs.STATUS, "running")
    yield storage
    storage.engine.dispose()


def attrs(storage) -> dict:
    return optuna.load_study(study_name="s", storage=storage).user_attrs


def test_every_value_is_stored_and_read_back_by_optuna(storage):
    widened = [{"old": [1, 2.5], "new": None}]
    set_study_attrs(storage, "s", {"status": "stopped", "widened": widened, "space_def": {"nested": ["x"]}})
    assert attrs(storage) == {
        "task": {"a": 1},
        "status": "stopped",
        "widened": widened,
        "space_def": {"nested": ["x"]},
    }


def test_a_failure_half_way_stores_nothing(storage):
    inserts = []

    def fail_on_second_insert(conn, cursor, statement, *args):
        if statement.startswith("INSERT INTO study_user_attributes"):
            inserts.append(statement)
            if len(inserts) == 2:
                raise sqlalchemy.exc.OperationalError(statement, {}, Exception("disk full"))

    event.listen(storage.engine, "before_cursor_execute", fail_on_second_insert)
    with pytest.raises(sqlalchemy.exc.OperationalError, match="disk full"):
        set_study_attrs(storage, "s", {"status": "stopped", "checkpoint_bytes": 1})
    event.remove(storage.engine, "before_cursor_execute", fail_on_second_insert)
    assert len(inserts) == 2  # the first key was written inside the transaction, then rolled back
    assert attrs(storage) == {"task": {"a": 1}, "status": "running"}


def test_a_value_json_cannot_hold_is_refused_before_any_write(storage):
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        set_study_attrs(storage, "s", {"status": "stopped", "widened": [{"old": float("nan")}]})
    assert attrs(storage) == {"task": {"a": 1}, "status": "running"}


def test_another_optuna_schema_is_refused_naming_both_versions(storage):
    with storage.engine.begin() as conn:
        conn.execute(sqlalchemy.text("UPDATE alembic_version SET version_num = 'v9.9.9'"))
    with pytest.raises(StudyError, match=r"schema 'v9.9.9', but rnntune writes schema 'v3.2.0.a'"):
        set_study_attrs(storage, "s", {"status": "stopped"})
    assert attrs(storage)["status"] == "running"
