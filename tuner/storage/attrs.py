"""Several study user attributes written in one transaction, so that a change made of several keys
(a widened range: the space, its history, the trial count, the status) is stored whole or not at all.

Optuna's public API writes one attribute per call and per transaction; this writes Optuna's own
`study_user_attributes` rows (JSON, as Optuna encodes them) in one SQL transaction, against the
table schema `SCHEMA_VERSION`, which it checks in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import optuna
import sqlalchemy

from tuner.errors import StudyError
from tuner.storage import study_attrs

# Optuna's table schema (its `alembic_version`) that the SQL of this package and of
# tuner.analysis.reads was written against.
SCHEMA_VERSION = "v3.2.0.a"

_VERSION = sqlalchemy.text("SELECT version_num FROM alembic_version")
_DELETE = sqlalchemy.text("DELETE FROM study_user_attributes WHERE study_id = :sid AND key = :key")
_INSERT = sqlalchemy.text(
    "INSERT INTO study_user_attributes (study_id, key, value_json) VALUES (:sid, :key, :value)"
)


def set_study_attrs(storage: optuna.storages.RDBStorage, name: str, values: Mapping[str, Any]) -> None:
    """Set every attribute of `values` on study `name` in one transaction: all of them or, on any
    error (a value not of its key's declared type, one JSON cannot encode, a lost connection), none. StudyError on a schema this module
    was not written for."""
    encoded = {
        key: json.dumps(study_attrs.checked(key, value), allow_nan=False) for key, value in values.items()
    }
    study_id = storage.get_study_id_from_name(name)
    with storage.engine.begin() as conn:
        found = conn.execute(_VERSION).scalar()
        if found != SCHEMA_VERSION:
            raise StudyError(
                f"the study database has Optuna schema {found!r}, but rnntune writes schema {SCHEMA_VERSION!r} "
                f"(Optuna {optuna.__version__}); run `optuna storage upgrade --storage URL`"
            )
        for key, value in encoded.items():
            conn.execute(_DELETE, {"sid": study_id, "key": key})
            conn.execute(_INSERT, {"sid": study_id, "key": key, "value": value})
