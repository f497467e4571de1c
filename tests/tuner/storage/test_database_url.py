"""The study database URL from the environment (what the Compose containers are given)."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from tuner.storage.database_url import DatabaseUrlError, from_environment
from tuner.storage.study import StudyError, resolve_db_url

POSTGRES = {
    "POSTGRES_HOST": "db",
    "POSTGRES_PASSWORD": "p@ss:w/rd %#?&=",
    "POSTGRES_USER": "tuner",
    "POSTGRES_DB": "studies",
}


def test_postgres_parts_make_a_url_that_keeps_every_character_of_the_password() -> None:
    url = make_url(from_environment(POSTGRES))
    assert (url.drivername, url.username, url.password, url.host, url.port, url.database) == (
        "postgresql+psycopg2",
        "tuner",
        POSTGRES["POSTGRES_PASSWORD"],
        "db",
        5432,
        "studies",
    )
    url = make_url(
        from_environment({"POSTGRES_HOST": "db", "POSTGRES_PASSWORD": "x", "POSTGRES_PORT": "6543"})
    )
    assert (url.username, url.database, url.port) == ("rnntune", "rnntune", 6543)


def test_an_explicit_url_wins_and_nothing_set_means_none() -> None:
    assert from_environment({**POSTGRES, "RNNTUNE_DB_URL": "sqlite:////tmp/x.db"}) == "sqlite:////tmp/x.db"
    assert from_environment({}) is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"POSTGRES_PASSWORD": "x"}, "POSTGRES_HOST"),
        ({"POSTGRES_HOST": "db"}, "POSTGRES_PASSWORD"),
        ({"POSTGRES_HOST": "db", "POSTGRES_PASSWORD": "x", "POSTGRES_PORT": "99999"}, "POSTGRES_PORT"),
    ],
)
def test_incomplete_postgres_settings_are_refused_by_name(env: dict, message: str) -> None:
    with pytest.raises(DatabaseUrlError, match=message):
        from_environment(env)


def test_every_command_resolves_the_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RNNTUNE_DB_URL", raising=False)
    for key, value in POSTGRES.items():
        monkeypatch.setenv(key, value)
    assert make_url(resolve_db_url()).password == POSTGRES["POSTGRES_PASSWORD"]
    assert resolve_db_url("sqlite:////tmp/given.db") == "sqlite:////tmp/given.db"
    monkeypatch.delenv("POSTGRES_HOST")
    with pytest.raises(StudyError, match="POSTGRES_HOST"):
        resolve_db_url()
