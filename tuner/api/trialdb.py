"""Bulk, read-only SQL access to Optuna's RDB schema for the API.

Why not `optuna.storages.RDBStorage.get_all_trials`: it builds ORM objects row by row and parses
one distribution JSON per parameter row, about 5 s for a 10,000-trial SQLite study — far outside
the API's latency budget. The queries here read the same tables (`trials`, `trial_values`,
`trial_params`, `trial_intermediate_values`, `trial_user_attributes`, schema version 12 of
Optuna 5) in five set-wise SELECTs and build light `TrialRecord`s. Writes never go through this
module: studies are created and changed with Optuna's own API.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sqlalchemy
from optuna.distributions import BaseDistribution, json_to_distribution

from tuner.api.records import ParamSpec, StudyRow, TrialRecord

_VALUE_TYPES = {"FINITE": None, "INF_POS": math.inf, "INF_NEG": -math.inf, "NAN": math.nan}


@dataclass(frozen=True)
class Fingerprint:
    """What changes whenever a study's trials change: the cache key of a study's snapshot."""

    study_id: int
    counts: tuple[tuple[str, int], ...]
    last_start: str | None
    last_complete: str | None
    running_steps: int
    # Largest ids of trial_user_attributes, trial_values, trial_params, trial_intermediate_values.
    last_ids: tuple[int, int, int, int]


@lru_cache(maxsize=4096)
def _distribution(text: str) -> BaseDistribution:
    """Parse a distribution JSON once: the same few strings repeat on every trial."""
    return json_to_distribution(text)


def _decode_float(value: float | None, value_type: str) -> float | None:
    special = _VALUE_TYPES.get(value_type)
    return value if special is None else special


def _iso(stamp: Any) -> str | None:
    if stamp is None:
        return None
    return str(stamp).replace(" ", "T")


class TrialDB:
    """Set-wise reads of studies and trials from one Optuna RDB URL (SQLite or PostgreSQL)."""

    def __init__(self, engine: sqlalchemy.engine.Engine) -> None:
        self._engine = engine

    def study_rows(self) -> list[StudyRow]:
        """Every study with its direction, user attrs, per-state counts and best value."""
        q_studies = sqlalchemy.text(
            "SELECT s.study_id, s.study_name, d.direction FROM studies s "
            "LEFT JOIN study_directions d ON d.study_id = s.study_id AND d.objective = 0 "
            "ORDER BY s.study_id"
        )
        q_attrs = sqlalchemy.text("SELECT study_id, key, value_json FROM study_user_attributes")
        q_counts = sqlalchemy.text(
            "SELECT study_id, state, COUNT(*) FROM trials GROUP BY study_id, state"
        )
        q_best = sqlalchemy.text(
            "SELECT t.study_id, MIN(v.value), MAX(v.value) FROM trials t "
            "JOIN trial_values v ON v.trial_id = t.trial_id AND v.objective = 0 "
            "WHERE t.state = 'COMPLETE' AND v.value_type = 'FINITE' GROUP BY t.study_id"
        )
        with self._engine.connect() as conn:
            studies = conn.execute(q_studies).all()
            attrs = conn.execute(q_attrs).all()
            counts = conn.execute(q_counts).all()
            best = conn.execute(q_best).all()
        attr_map: dict[int, dict[str, Any]] = {}
        for study_id, key, value_json in attrs:
            attr_map.setdefault(study_id, {})[key] = json.loads(value_json)
        count_map: dict[int, dict[str, int]] = {}
        for study_id, state, n in counts:
            count_map.setdefault(study_id, {})[state] = int(n)
        best_map = {row[0]: (row[1], row[2]) for row in best}
        rows = []
        for study_id, name, direction in studies:
            direction = (direction or "MINIMIZE").lower()
            low, high = best_map.get(study_id, (None, None))
            rows.append(
                StudyRow(
                    study_id=study_id,
                    name=name,
                    direction=direction,
                    user_attrs=attr_map.get(study_id, {}),
                    counts=count_map.get(study_id, {}),
                    best_value=low if direction == "minimize" else high,
                )
            )
        return rows

    def study_row(self, name: str) -> StudyRow | None:
        """One study by name (None when there is none), with the same fields as `study_rows`."""
        with self._engine.connect() as conn:
            found = conn.execute(
                sqlalchemy.text(
                    "SELECT s.study_id, d.direction FROM studies s LEFT JOIN study_directions d "
                    "ON d.study_id = s.study_id AND d.objective = 0 WHERE s.study_name = :name"
                ),
                {"name": name},
            ).first()
            if found is None:
                return None
            study_id, direction = found
            attrs = conn.execute(
                sqlalchemy.text(
                    "SELECT key, value_json FROM study_user_attributes WHERE study_id = :sid"
                ),
                {"sid": study_id},
            ).all()
            counts = conn.execute(
                sqlalchemy.text(
                    "SELECT state, COUNT(*) FROM trials WHERE study_id = :sid GROUP BY state"
                ),
                {"sid": study_id},
            ).all()
        return StudyRow(
            study_id=study_id,
            name=name,
            direction=(direction or "MINIMIZE").lower(),
            user_attrs={key: json.loads(value) for key, value in attrs},
            counts={state: int(n) for state, n in counts},
            best_value=None,
        )

    def fingerprint(self, study_id: int) -> Fingerprint:
        """A cheap summary that changes when any trial of the study is added, updated or ends.

        The last-ids part is global (any study's new attr, value or param changes it): that only
        costs an extra reload, and reading a table's max primary key is an index lookup.
        """
        with self._engine.connect() as conn:
            counts = conn.execute(
                sqlalchemy.text(
                    "SELECT state, COUNT(*), MAX(datetime_start), MAX(datetime_complete) "
                    "FROM trials WHERE study_id = :sid GROUP BY state ORDER BY state"
                ),
                {"sid": study_id},
            ).all()
            running_steps = conn.execute(
                sqlalchemy.text(
                    "SELECT COUNT(*) FROM trial_intermediate_values iv JOIN trials t "
                    "ON t.trial_id = iv.trial_id WHERE t.study_id = :sid AND t.state = 'RUNNING'"
                ),
                {"sid": study_id},
            ).scalar()
            last_ids = conn.execute(
                sqlalchemy.text(
                    "SELECT (SELECT MAX(trial_user_attribute_id) FROM trial_user_attributes), "
                    "(SELECT MAX(trial_value_id) FROM trial_values), "
                    "(SELECT MAX(param_id) FROM trial_params), "
                    "(SELECT MAX(trial_intermediate_value_id) FROM trial_intermediate_values)"
                )
            ).one()
        starts = [row[2] for row in counts if row[2] is not None]
        completes = [row[3] for row in counts if row[3] is not None]
        return Fingerprint(
            study_id=study_id,
            counts=tuple((row[0], int(row[1])) for row in counts),
            last_start=str(max(starts)) if starts else None,
            last_complete=str(max(completes)) if completes else None,
            running_steps=int(running_steps or 0),
            last_ids=tuple(int(i or 0) for i in last_ids),
        )

    def changed_trial_ids(self, study_id: int, since: Fingerprint, unfinished: set[int], known_max: int) -> set[int]:
        """Trials of the study that may differ from a snapshot taken at `since`: new ones, ones that
        were unfinished, and ones with attrs, values, params or steps added since."""
        a, v, p, i = since.last_ids
        query = sqlalchemy.text(
            "SELECT trial_id FROM trials WHERE study_id = :sid AND trial_id IN ("
            "SELECT trial_id FROM trial_user_attributes WHERE trial_user_attribute_id > :a "
            "UNION SELECT trial_id FROM trial_values WHERE trial_value_id > :v "
            "UNION SELECT trial_id FROM trial_params WHERE param_id > :p "
            "UNION SELECT trial_id FROM trial_intermediate_values WHERE trial_intermediate_value_id > :i) "
            "OR (study_id = :sid AND trial_id > :known)"
        )
        with self._engine.connect() as conn:
            rows = conn.execute(query, {"sid": study_id, "a": a, "v": v, "p": p, "i": i, "known": known_max}).all()
        return {row[0] for row in rows} | unfinished

    def trials(self, study_id: int, only: set[int] | None = None) -> list[TrialRecord]:
        """Trials of the study (those with ids in `only`, if given), ordered by number, with params,
        values, learning curves and user attrs."""
        params_sql = (
            "SELECT p.trial_id, p.param_name, p.param_value, p.distribution_json "
            "FROM trial_params p JOIN trials t ON t.trial_id = p.trial_id WHERE t.study_id = :sid{only} "
            "ORDER BY p.param_id"
        )
        values_sql = (
            "SELECT v.trial_id, v.value, v.value_type FROM trial_values v "
            "JOIN trials t ON t.trial_id = v.trial_id WHERE t.study_id = :sid AND v.objective = 0{only}"
        )
        steps_sql = (
            "SELECT iv.trial_id, iv.step, iv.intermediate_value, iv.intermediate_value_type "
            "FROM trial_intermediate_values iv JOIN trials t ON t.trial_id = iv.trial_id "
            "WHERE t.study_id = :sid{only} ORDER BY iv.trial_id, iv.step"
        )
        attrs_sql = (
            "SELECT a.trial_id, a.key, a.value_json FROM trial_user_attributes a "
            "JOIN trials t ON t.trial_id = a.trial_id WHERE t.study_id = :sid{only}"
        )
        trials_sql = (
            "SELECT t.trial_id, t.number, t.state, t.datetime_start, t.datetime_complete FROM trials t "
            "WHERE t.study_id = :sid{only} ORDER BY t.number"
        )
        only_sql = " AND t.trial_id IN :ids" if only is not None else ""
        statements = [
            sqlalchemy.text(sql.format(only=only_sql))
            for sql in (trials_sql, params_sql, values_sql, steps_sql, attrs_sql)
        ]
        if only is not None:
            statements = [st.bindparams(sqlalchemy.bindparam("ids", expanding=True)) for st in statements]
        bind = {"sid": study_id, **({"ids": sorted(only)} if only is not None else {})}
        with self._engine.connect() as conn:
            trial_rows, param_rows, value_rows, step_rows, attr_rows = (
                conn.execute(statement, bind).all() for statement in statements
            )

        params: dict[int, dict[str, Any]] = {}
        specs: dict[int, dict[str, ParamSpec]] = {}
        for trial_id, name, internal, dist_json in param_rows:
            dist = _distribution(dist_json)
            params.setdefault(trial_id, {})[name] = dist.to_external_repr(internal)
            specs.setdefault(trial_id, {})[name] = ParamSpec.from_distribution(name, dist_json)
        values = {tid: _decode_float(v, vt) for tid, v, vt in value_rows}
        curves: dict[int, list[tuple[int, float | None]]] = {}
        for trial_id, step, value, value_type in step_rows:
            curves.setdefault(trial_id, []).append((int(step), _decode_float(value, value_type)))
        attrs: dict[int, dict[str, Any]] = {}
        for trial_id, key, value_json in attr_rows:
            attrs.setdefault(trial_id, {})[key] = json.loads(value_json)

        return [
            TrialRecord(
                trial_id=int(trial_id),
                number=int(number),
                state=state,
                value=values.get(trial_id),
                params=params.get(trial_id, {}),
                specs=specs.get(trial_id, {}),
                curve=tuple(curves.get(trial_id, ())),
                user_attrs=attrs.get(trial_id, {}),
                datetime_start=_iso(start),
                datetime_complete=_iso(complete),
            )
            for trial_id, number, state, start, complete in trial_rows
        ]
