"""The API's read model: studies and their trials, read fast from Optuna's RDB schema and cached.

Why not `optuna.load_study(...).get_trials()`: it takes about 5 s for a 10,000-trial SQLite study
(ORM objects row by row), far outside the API's latency budget (bench/api_latency.py). Trials are
read with set-wise SELECTs of Optuna's tables (schema `SCHEMA_VERSION`, checked at start-up) into
light immutable records; tests/tuner/api/test_reads.py checks they agree with Optuna's reading.
A study's `StudySnapshot` is reused while its fingerprint is unchanged; rows and fingerprints are
revalidated at most every `revalidate_s`. Writes go through Optuna's API, never through here.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import optuna
import sqlalchemy

from tuner.analysis import study_rows
from tuner.analysis.records import ParamSpec, StudyRow, TrialRecord, parse_distribution
from tuner.errors import StudyNotFoundError
from tuner.storage.attrs import SCHEMA_VERSION
from tuner.storage.study import StudyError, redact_url

__all__ = [
    "MAX_COMPUTATIONS", "SCHEMA_VERSION", "SORT_KEYS", "ParamSpec", "SchemaMismatch", "StudyNotFound",
    "StudyRow", "StudySnapshot", "StudyStore", "TrialDB", "TrialRecord", "check_schema",
]  # fmt: skip

SORT_KEYS = ("number", "-number", "objective", "-objective")
# Derived results (sensitivity, plots for some fractions) kept per study version, least recently
# used evicted first: memory stays bounded and no sequence of reads is ever refused.
MAX_COMPUTATIONS = 16
# A snapshot is read again at least this often even when its fingerprint is unchanged, which bounds
# how long a row rewritten in place (a trial attr set again) can go unseen.
MAX_SNAPSHOT_AGE_S = 30.0
_LOCK_STRIPES = 64
_PAGES_KEPT = 8  # listing pages (offset, limit) cached at once
_SPECIAL = {"FINITE": None, "INF_POS": math.inf, "INF_NEG": -math.inf, "NAN": math.nan}


# The one "no such study" error (tuner.errors), under the name the read model's callers use.
StudyNotFound = StudyNotFoundError


class SchemaMismatch(StudyError):
    """The study database's Optuna schema is not the one this module reads."""


def _float(value: float | None, value_type: str) -> float | None:
    special = _SPECIAL.get(value_type)
    return value if special is None else special


def _attr_value(value_json: str) -> Any:
    """A stored trial attribute's value; its text as stored when that is not JSON (a row written
    by another tool or by hand), for the reader of that attribute to refuse by name, never a 5xx."""
    try:
        return json.loads(value_json)
    except (TypeError, ValueError):
        return value_json


def _iso(stamp: Any) -> str | None:
    return None if stamp is None else str(stamp).replace(" ", "T")


_FP_STATES = sqlalchemy.text(
    "SELECT state, COUNT(*), MAX(datetime_start), MAX(datetime_complete) FROM trials "
    "WHERE study_id = :sid GROUP BY state ORDER BY state"
)


def _rows_of(table: str, id_column: str) -> str:
    """COUNT and MAX(id) of `table`'s rows of the study's trials: a row committed late with a lower
    id (PostgreSQL takes ids before commit) still raises the count."""
    where = f"FROM {table} r JOIN trials t ON t.trial_id = r.trial_id WHERE t.study_id = :sid"
    return f"(SELECT COUNT(*) {where}), (SELECT MAX(r.{id_column}) {where})"


_FP_ROWS = sqlalchemy.text(
    "SELECT (SELECT COUNT(*) FROM trial_intermediate_values iv JOIN trials t ON t.trial_id = iv.trial_id "
    "WHERE t.study_id = :sid AND t.state = 'RUNNING'), "
    + ", ".join(
        _rows_of(table, column)
        for table, column in (
            ("trial_user_attributes", "trial_user_attribute_id"),
            ("trial_values", "trial_value_id"),
            ("trial_params", "param_id"),
            ("trial_intermediate_values", "trial_intermediate_value_id"),
        )
    )
)
_TRIALS = sqlalchemy.text(
    "SELECT trial_id, number, state, datetime_start, datetime_complete FROM trials WHERE study_id = :sid "
    "ORDER BY number"
)
_PARAMS = sqlalchemy.text(
    "SELECT p.trial_id, p.param_name, p.param_value, p.distribution_json FROM trial_params p "
    "JOIN trials t ON t.trial_id = p.trial_id WHERE t.study_id = :sid ORDER BY p.param_id"
)
_VALUES = sqlalchemy.text(
    "SELECT v.trial_id, v.value, v.value_type FROM trial_values v JOIN trials t ON t.trial_id = v.trial_id "
    "WHERE t.study_id = :sid AND v.objective = 0"
)
_STEPS = sqlalchemy.text(
    "SELECT iv.trial_id, iv.step, iv.intermediate_value, iv.intermediate_value_type "
    "FROM trial_intermediate_values iv JOIN trials t ON t.trial_id = iv.trial_id WHERE t.study_id = :sid "
    "ORDER BY iv.trial_id, iv.step"
)
_TRIAL_ATTRS = sqlalchemy.text(
    "SELECT a.trial_id, a.key, a.value_json FROM trial_user_attributes a JOIN trials t "
    "ON t.trial_id = a.trial_id WHERE t.study_id = :sid"
)


class TrialDB:
    """Set-wise reads of studies and trials from one Optuna RDB engine (SQLite or PostgreSQL)."""

    def __init__(self, storage: optuna.storages.RDBStorage) -> None:
        self._storage = storage
        self._engine = storage.engine

    def study_page(self, offset: int, limit: int) -> tuple[int, list[StudyRow]]:
        """How many studies there are, and those from `offset` (oldest first, at most `limit`)."""
        with self._engine.connect() as conn:
            return study_rows.page(conn, offset, limit)

    def study_rows(self) -> list[StudyRow]:
        """Every study, oldest first (what `study_page` gives a page of)."""
        return self.study_page(0, 2**62)[1]

    def study_row(self, name: str) -> StudyRow | None:
        """One study by name, or None when there is none."""
        with self._engine.connect() as conn:
            return study_rows.by_name(conn, name)

    def fingerprint(self, study_id: int) -> tuple:
        """A summary of this study alone that changes when a trial of it is added or ends, or a row is
        added to any of its trial tables: counts and times by state, steps of running trials, and
        per table the count and last id of the study's rows. Counts make it right when ids commit
        out of order; only rows rewritten in place (an attr set again) leave it unchanged, which
        `StudyStore`'s `max_age_s` bounds. Another study's writes never change it."""
        with self._engine.connect() as conn:
            states = conn.execute(_FP_STATES, {"sid": study_id}).all()
            rest = conn.execute(_FP_ROWS, {"sid": study_id}).one()
        return (study_id, tuple(tuple(map(str, row)) for row in states), tuple(rest))

    def trials(self, study_id: int) -> list[TrialRecord]:
        """The study's trials by number, with params, objective, learning curve and user attrs."""
        bind = {"sid": study_id}
        with self._engine.connect() as conn:
            trial_rows, param_rows, value_rows, step_rows, attr_rows = (
                conn.execute(q, bind).all() for q in (_TRIALS, _PARAMS, _VALUES, _STEPS, _TRIAL_ATTRS)
            )
        params: dict[int, dict[str, Any]] = {}
        specs: dict[int, dict[str, ParamSpec]] = {}
        for trial_id, name, internal, dist_json in param_rows:
            params.setdefault(trial_id, {})[name] = parse_distribution(dist_json).to_external_repr(internal)
            specs.setdefault(trial_id, {})[name] = ParamSpec.from_distribution(name, dist_json)
        values = {tid: _float(v, vt) for tid, v, vt in value_rows}
        curves: dict[int, list[tuple[int, float | None]]] = {}
        for trial_id, step, value, value_type in step_rows:
            curves.setdefault(trial_id, []).append((int(step), _float(value, value_type)))
        attrs: dict[int, dict[str, Any]] = {}
        for trial_id, key, value_json in attr_rows:
            attrs.setdefault(trial_id, {})[key] = _attr_value(value_json)
        return [
            TrialRecord(
                int(tid),
                int(number),
                state,
                values.get(tid),
                params.get(tid, {}),
                specs.get(tid, {}),
                tuple(curves.get(tid, ())),
                attrs.get(tid, {}),
                _iso(start),
                _iso(end),
            )
            for tid, number, state, start, end in trial_rows
        ]


def _stripe(locks: list[threading.Lock], key: Any) -> threading.Lock:
    """One of a fixed set of locks for `key`: a lock table that unknown names cannot grow."""
    return locks[hash(key) % len(locks)]


class StudySnapshot:
    """Trials of one study at one fingerprint; immutable apart from its memo of derived results and
    `loaded_at`, which a re-read that finds the same trials moves on (the memo survives it)."""

    def __init__(self, fingerprint: tuple, direction: str, trials: list[TrialRecord]):
        self.fingerprint = fingerprint
        self.loaded_at = time.monotonic()
        self.direction = direction
        self.trials = trials
        self.by_number = {t.number: t for t in trials}
        self._orders: dict[tuple[str | None, str], list[TrialRecord]] = {}
        self._memo: OrderedDict[Any, Any] = OrderedDict()
        self._memo_lock = threading.Lock()
        self._summaries: dict[int, str] = {}
        self._compute_locks = [threading.Lock() for _ in range(8)]

    def _objective_key(self, trial: TrialRecord) -> tuple[int, float, int]:
        """Best first: finite values by objective (direction-aware), then the rest by number."""
        if trial.value is None or math.isnan(trial.value):
            return (1, 0.0, trial.number)
        return (0, trial.value if self.direction == "minimize" else -trial.value, trial.number)

    def ordered(self, state: str | None, sort: str) -> list[TrialRecord]:
        """Trials in `state` (all when None) in `sort` order (one of `SORT_KEYS`)."""
        found = self._orders.get((state, sort))
        if found is None:
            found = [t for t in self.trials if state is None or t.state == state]
            if sort.endswith("objective"):
                found.sort(key=self._objective_key, reverse=sort.startswith("-"))
            elif sort == "-number":
                found.reverse()
            self._orders[(state, sort)] = found
        return found

    def analysed(self, include: str) -> tuple[list[TrialRecord], list[TrialRecord]]:
        """The trials the sensitivity analysis and importances read: the COMPLETE ones with a finite
        objective (best first) and, for `include="all"`, the PRUNED ones."""
        completed = [t for t in self.ordered("COMPLETE", "objective") if t.completed]
        return completed, self.ordered("PRUNED", "number") if include == "all" else []

    def complete_points(self) -> list[tuple[float, dict[str, Any]]]:
        """(objective, params) of the COMPLETE trials, best first: what range-boundary alerts read."""
        return [(t.value, t.params) for t in self.ordered("COMPLETE", "objective") if t.value is not None]

    @property
    def best(self) -> TrialRecord | None:
        """The best COMPLETE trial with a finite objective, or None."""
        completed = self.ordered("COMPLETE", "objective")
        return completed[0] if completed and completed[0].completed else None

    def summary_json(self, trial: TrialRecord, render: Callable[[TrialRecord], str]) -> str:
        """`render(trial)` (a trial's JSON for list pages) once per trial of this snapshot."""
        found = self._summaries.get(trial.number)
        if found is None:
            found = self._summaries[trial.number] = render(trial)
        return found

    def peek(self, key: Any) -> Any:
        """The memoised result for `key` (now the most recently used), or None if not kept."""
        with self._memo_lock:
            found = self._memo.get(key)
            if found is not None:
                self._memo.move_to_end(key)
            return found

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """`compute()` for this snapshot (sensitivity, plots), kept for the `MAX_COMPUTATIONS` most
        recently used keys; concurrent callers of one key wait for a single computation. Eviction
        bounds memory; the callers bound the keys' variety (fractions are quantised), so a request is
        never refused and at worst recomputes."""
        with _stripe(self._compute_locks, key):
            found = self.peek(key)
            if found is None:
                found = compute()
                with self._memo_lock:
                    self._memo[key] = found
                    while len(self._memo) > MAX_COMPUTATIONS:
                        self._memo.popitem(last=False)
            return found


def check_schema(db_url: str) -> None:
    """SchemaMismatch unless the database is new or at Optuna schema `SCHEMA_VERSION`."""
    engine = sqlalchemy.create_engine(db_url, **_engine_kwargs(db_url))
    with engine.connect() as conn:
        has_table = sqlalchemy.inspect(conn).has_table("alembic_version")
        found = (
            conn.execute(sqlalchemy.text("SELECT version_num FROM alembic_version")).scalar()
            if has_table
            else None
        )
    engine.dispose()
    if has_table and found != SCHEMA_VERSION:
        raise SchemaMismatch(
            f"the study database {redact_url(db_url)} has Optuna schema {found!r}, but the API reads schema "
            f"{SCHEMA_VERSION!r} (Optuna {optuna.__version__}); run `optuna storage upgrade --storage URL` "
            f"or use the Optuna version that wrote it"
        )


class StudyStore:
    """Reads studies from one Optuna RDB URL. Pages of the listing, each study's row and each
    study's snapshot are kept for `revalidate_s`, then checked again (one caller per key loads; the
    others wait). A listing reads only its page's studies, so it costs the same with 10 studies or
    10,000 in the database."""

    def __init__(
        self,
        db_url: str,
        max_snapshots: int = 8,
        revalidate_s: float = 1.0,
        max_age_s: float = MAX_SNAPSHOT_AGE_S,
    ) -> None:
        check_schema(db_url)
        self.db_url = db_url
        self.storage = optuna.storages.RDBStorage(db_url, engine_kwargs=_engine_kwargs(db_url))
        self.db = TrialDB(self.storage)
        self._ttl = revalidate_s
        self._max_age = max_age_s
        # Snapshots (key: the name), rows (("row", name)) and listing pages (("page", offset, limit)).
        self._capacity = 2 * max_snapshots + _PAGES_KEPT
        self._fresh: OrderedDict[Any, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._loading = [threading.Lock() for _ in range(_LOCK_STRIPES)]

    def _peek(self, key: Any, stale: bool = False) -> Any:
        with self._lock:
            hit = self._fresh.get(key)
        return hit[1] if hit is not None and (stale or time.monotonic() - hit[0] < self._ttl) else None

    def _cached(self, key: Any, load: Callable[[Any], Any]) -> Any:
        """The value of `key` if checked within `revalidate_s`, else `load(previous value or None)`."""
        found = self._peek(key)
        if found is None:
            with _stripe(self._loading, key):
                found = self._peek(key)
                if found is None:
                    found = load(self._peek(key, stale=True))
                    if found is None:
                        return None  # nothing to keep (a study that does not exist)
                    with self._lock:
                        self._fresh[key] = (time.monotonic(), found)
                        self._fresh.move_to_end(key)
                        while len(self._fresh) > self._capacity:
                            self._fresh.popitem(last=False)
        return found

    def page(self, offset: int, limit: int) -> tuple[int, list[StudyRow]]:
        """The number of studies and the rows of those from `offset` (oldest first, at most `limit`)."""
        return self._cached(("page", offset, limit), lambda _: self.db.study_page(offset, limit))

    def fresh_page(self, offset: int, limit: int) -> tuple[int, list[StudyRow]] | None:
        """`page(offset, limit)` if it is cached and fresh, else None (no database access)."""
        return self._peek(("page", offset, limit))

    def row(self, name: str) -> StudyRow:
        """The study's row (StudyNotFound when there is none)."""
        found = self._cached(("row", name), lambda _: self.db.study_row(name))
        if found is None:
            raise StudyNotFound(f"no study named {name!r}")
        return found

    def find(self, name: str) -> StudyRow | None:
        """The study's row read now, bypassing the cache; None when there is none."""
        return self.db.study_row(name)

    def fresh_snapshot(self, name: str) -> StudySnapshot | None:
        """`snapshot(row(name))` if both are cached and fresh, else None (no database access)."""
        return self._peek(name) if self._peek(("row", name)) is not None else None

    def invalidate(self, name: str) -> None:
        """Check `name` and every listing page again on their next read (after this API changed it)."""
        with self._lock:
            for key in list(self._fresh):
                if key in (name, ("row", name)) or (isinstance(key, tuple) and key[0] == "page"):
                    self._fresh[key] = (-math.inf, self._fresh[key][1])

    def snapshot(self, row: StudyRow) -> StudySnapshot:
        """The study's trials; re-read when its fingerprint changed (checked every `revalidate_s`)
        or the snapshot is `max_age_s` old. The fingerprint is taken before the trials, so a write
        that lands between the two makes the next check read again.

        Staleness: a trial added or ending, or a row added to its trial tables, is seen at most
        `revalidate_s` after it commits (out-of-order ids included); a row rewritten in place, `max_age_s`."""

        def load(cached: StudySnapshot | None) -> StudySnapshot:
            fingerprint = self.db.fingerprint(row.study_id)
            same = cached is not None and cached.fingerprint == fingerprint
            if same and cached is not None and time.monotonic() - cached.loaded_at < self._max_age:
                return cached
            trials = self.db.trials(row.study_id)
            if same and cached is not None and cached.trials == trials:
                # Read again at its age and found unchanged: keep it, with the analyses it holds.
                cached.loaded_at = time.monotonic()
                return cached
            return StudySnapshot(fingerprint, row.direction, trials)

        return self._cached(row.name, load)

    def close(self) -> None:
        self.storage.engine.dispose()


def _engine_kwargs(db_url: str) -> dict:
    """SQLite: wait for a sweep's write lock instead of failing at once (readers share the file)."""
    if sqlalchemy.engine.make_url(db_url).get_backend_name() == "sqlite":
        return {"connect_args": {"timeout": 30}}
    return {"pool_pre_ping": True}
