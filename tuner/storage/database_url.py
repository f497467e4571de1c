"""The study database URL from the environment: $RNNTUNE_DB_URL, else one built from POSTGRES_*.

The containers of docker-compose.yml get the PostgreSQL server's parts (POSTGRES_HOST, _PORT, _USER,
_DB, _PASSWORD) rather than a URL, so that a password needs no quoting in .env; every `rnntune`
command builds the URL here with `sqlalchemy.URL.create`, which escapes each part correctly.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import URL

from tuner.errors import InvalidInput

DB_ENV = "RNNTUNE_DB_URL"
POSTGRES_DRIVER = "postgresql+psycopg2"
# Defaults of the parts, as docker-compose.yml and .env.example name them.
POSTGRES_DEFAULTS = {"POSTGRES_USER": "rnntune", "POSTGRES_DB": "rnntune", "POSTGRES_PORT": "5432"}


class DatabaseUrlError(InvalidInput):
    """The environment names a PostgreSQL server but not enough to reach it."""


def postgres_url(environ: Mapping[str, str]) -> str:
    """The PostgreSQL URL of POSTGRES_HOST, _PORT, _USER, _DB and _PASSWORD (host and password required)."""
    value = {name: environ.get(name) or default for name, default in POSTGRES_DEFAULTS.items()}
    for required in ("POSTGRES_HOST", "POSTGRES_PASSWORD"):
        if not environ.get(required):
            raise DatabaseUrlError(
                f"{required} is not set: a PostgreSQL study database needs POSTGRES_HOST and "
                "POSTGRES_PASSWORD (or the whole URL in RNNTUNE_DB_URL)"
            )
    port = value["POSTGRES_PORT"]
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise DatabaseUrlError(f"POSTGRES_PORT must be a port number from 1 to 65535, got {port!r}")
    url = URL.create(
        POSTGRES_DRIVER,
        username=value["POSTGRES_USER"],
        password=environ["POSTGRES_PASSWORD"],
        host=environ["POSTGRES_HOST"],
        port=int(port),
        database=value["POSTGRES_DB"],
    )
    return url.render_as_string(hide_password=False)


def from_environment(environ: Mapping[str, str]) -> str | None:
    """$RNNTUNE_DB_URL; else the PostgreSQL URL when POSTGRES_HOST or POSTGRES_PASSWORD is set; else None."""
    if environ.get(DB_ENV):
        return environ[DB_ENV]
    if environ.get("POSTGRES_HOST") or environ.get("POSTGRES_PASSWORD"):
        return postgres_url(environ)
    return None
