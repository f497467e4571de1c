"""The test processes' one parse of Optuna's migration scripts (tests/optuna_scripts.py): installed on
the pinned Optuna, parsed once, and a database made with it is the one Optuna makes without it."""

from __future__ import annotations

import sqlite3

import optuna
from alembic.script import ScriptDirectory
from optuna.storages._rdb import storage as rdb

from tests.optuna_scripts import OPTUNA_VERSION, share_alembic_scripts


def _tables(path) -> dict[str, list[tuple]]:
    with sqlite3.connect(path) as conn:
        return {
            "alembic_version": conn.execute("SELECT version_num FROM alembic_version").fetchall(),
            "version_info": conn.execute(
                "SELECT schema_version, library_version FROM version_info"
            ).fetchall(),
        }


def test_installed_on_the_pinned_optuna_once() -> None:
    assert optuna.__version__ == OPTUNA_VERSION  # an upgrade re-reads optuna/storages/_rdb/storage.py
    assert getattr(rdb._VersionManager._create_alembic_script, "shared", False)
    assert share_alembic_scripts() is False  # conftest installed it; a second call changes nothing


def test_new_databases_parse_the_scripts_no_more(tmp_path, monkeypatch) -> None:
    built = []
    monkeypatch.setattr(ScriptDirectory, "from_config", _counting(ScriptDirectory.from_config, built))
    optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'warm.db'}")
    before = len(built)
    for n in range(3):
        optuna.storages.RDBStorage(f"sqlite:///{tmp_path / f'{n}.db'}")
    assert len(built) == before  # the first database of the process may parse them, no later one


def test_a_database_made_with_it_is_the_one_optuna_makes_without_it(tmp_path, monkeypatch) -> None:
    shared = rdb._VersionManager._create_alembic_script
    optuna.create_study(storage=f"sqlite:///{tmp_path / 'shared.db'}", study_name="s")
    monkeypatch.setattr(rdb._VersionManager, "_create_alembic_script", shared.original)
    optuna.create_study(storage=f"sqlite:///{tmp_path / 'plain.db'}", study_name="s")
    assert _tables(tmp_path / "shared.db") == _tables(tmp_path / "plain.db")
    head = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'plain.db'}").get_head_version()
    assert _tables(tmp_path / "shared.db")["alembic_version"] == [(head,)]
    # Optuna's own check, with its own parse, accepts the database made with the shared one.
    optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'shared.db'}").get_current_version()
    opened = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 'shared.db'}")
    assert opened.study_name == "s"


def _counting(build, calls: list):
    def counted(*args, **kwargs):
        calls.append(args)
        return build(*args, **kwargs)

    return counted
