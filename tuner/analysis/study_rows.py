"""Studies as rows for the listing and for one study's reads: identity, direction, user attrs, trial
counts by state and best objective, read set-wise from Optuna's tables for a page of studies or one
study by name, so a listing reads `limit` studies whatever the database holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy

from tuner.analysis.records import StudyRow
from tuner.storage import stored_json

_TOTAL = sqlalchemy.text("SELECT COUNT(*) FROM studies")
_PAGE = sqlalchemy.text(
    "SELECT study_id, study_name FROM studies ORDER BY study_id LIMIT :limit OFFSET :offset"
)
_BY_NAME = sqlalchemy.text("SELECT study_id, study_name FROM studies WHERE study_name = :name")


def _of_ids(sql: str) -> sqlalchemy.TextClause:
    """`sql` with `:ids` bound to a list of study ids (an IN list)."""
    return sqlalchemy.text(sql).bindparams(sqlalchemy.bindparam("ids", expanding=True))


_DIRECTIONS = _of_ids(
    "SELECT study_id, direction FROM study_directions WHERE study_id IN :ids AND objective = 0"
)
_ATTRS = _of_ids("SELECT study_id, key, value_json FROM study_user_attributes WHERE study_id IN :ids")
_COUNTS = _of_ids(
    "SELECT study_id, state, COUNT(*) FROM trials WHERE study_id IN :ids GROUP BY study_id, state"
)
_BEST = _of_ids(
    "SELECT t.study_id, MIN(v.value), MAX(v.value) FROM trials t JOIN trial_values v ON v.trial_id = "
    "t.trial_id AND v.objective = 0 WHERE t.study_id IN :ids AND t.state = 'COMPLETE' "
    "AND v.value_type = 'FINITE' GROUP BY t.study_id"
)


def page(conn: sqlalchemy.Connection, offset: int, limit: int) -> tuple[int, list[StudyRow]]:
    """How many studies there are, and those from `offset` (oldest first, at most `limit`)."""
    total = int(conn.execute(_TOTAL).scalar_one())
    return total, _rows(conn, conn.execute(_PAGE, {"offset": offset, "limit": limit}).all())


def by_name(conn: sqlalchemy.Connection, name: str) -> StudyRow | None:
    """The study called `name`, or None when there is none."""
    rows = _rows(conn, conn.execute(_BY_NAME, {"name": name}).all())
    return rows[0] if rows else None


def _rows(conn: sqlalchemy.Connection, ids: Sequence[Any]) -> list[StudyRow]:
    if not ids:
        return []
    params = {"ids": [sid for sid, _ in ids]}
    directions: dict[int, Any] = dict(conn.execute(_DIRECTIONS, params).all())
    attrs: dict[int, dict[str, Any]] = {}
    for sid, key, value in conn.execute(_ATTRS, params):
        attrs.setdefault(sid, {})[key] = stored_json.decode(value)  # never raises: see stored_json
    counts: dict[int, dict[str, int]] = {}
    for sid, state, n in conn.execute(_COUNTS, params):
        counts.setdefault(sid, {})[state] = int(n)
    best = {row[0]: row[1:] for row in conn.execute(_BEST, params)}
    rows = []
    for sid, name in ids:
        direction = "maximize" if str(directions.get(sid, "")).upper().endswith("MAXIMIZE") else "minimize"
        best_value = best.get(sid, (None, None))[0 if direction == "minimize" else 1]
        rows.append(StudyRow(sid, name, direction, attrs.get(sid, {}), counts.get(sid, {}), best_value))
    return rows
