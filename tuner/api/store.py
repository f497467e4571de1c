"""The API's read side: studies by name, and their trial snapshots cached per study version.

Two layers keep reads cheap on big studies:
* A study's trials are held as a snapshot, reused while the study's fingerprint (trial counts by
  state, last start/complete times, intermediate values of running trials, last attr/value/param
  ids) is unchanged: a study that is not written to is read from the database once, a running
  sweep costs one patch per change: only trials that are new, were unfinished, or got rows since
  are re-read (Optuna never deletes a trial). One caller rebuilds while the others wait.
* Study rows (attrs, counts) and the fingerprint check itself are revalidated at most every
  `revalidate_s` (default 1 s), so under load a request rarely touches the database at all; what a
  client sees is at most that old. Changes made through this API invalidate at once.
"""

from __future__ import annotations

import gc
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import optuna
import sqlalchemy

from tuner.api.records import StudyRow
from tuner.api.snapshot import StudySnapshot
from tuner.api.trialdb import TrialDB


# Above this many changed trials a snapshot is re-read whole rather than patched.
_MAX_INCREMENTAL = 1000


class StudyNotFound(LookupError):
    """No study of that name in the study database."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no study named {name!r}")
        self.name = name


class _Fresh:
    """A value recomputed when older than `ttl_s` (or invalidated); one caller recomputes."""

    def __init__(self, ttl_s: float) -> None:
        self._ttl = ttl_s
        self._values: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()
        self._loading: dict[Any, threading.Lock] = {}

    def get(self, key: Any, load: Callable[[], Any]) -> Any:
        now = time.monotonic()
        with self._lock:
            hit = self._values.get(key)
            if hit is not None and now - hit[0] < self._ttl:
                return hit[1]
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            with self._lock:
                hit = self._values.get(key)
                if hit is not None and time.monotonic() - hit[0] < self._ttl:
                    return hit[1]
            value = load()
            with self._lock:
                if value is not None:
                    self._values[key] = (time.monotonic(), value)
                    while len(self._values) > 4096:
                        self._values.pop(next(iter(self._values)))
            return value

    def peek(self, key: Any) -> Any:
        """The value if it is fresh, else None; never loads (for callers that must not block)."""
        with self._lock:
            hit = self._values.get(key)
        if hit is not None and time.monotonic() - hit[0] < self._ttl:
            return hit[1]
        return None

    def invalidate(self, key: Any = None) -> None:
        with self._lock:
            if key is None:
                self._values.clear()
            else:
                self._values.pop(key, None)


class StudyStore:
    """Reads studies from one Optuna RDB URL; keeps up to `max_snapshots` studies' trials cached."""

    def __init__(self, db_url: str, max_snapshots: int = 8, revalidate_s: float = 1.0) -> None:
        self.db_url = db_url
        self.storage = optuna.storages.RDBStorage(db_url, engine_kwargs=_engine_kwargs(db_url))
        self.db = TrialDB(self.storage.engine)
        self._max = max_snapshots
        self._snapshots: OrderedDict[str, StudySnapshot] = OrderedDict()
        self._build_locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._rows = _Fresh(revalidate_s)
        self._checked = _Fresh(revalidate_s)

    def rows(self) -> list[StudyRow]:
        return self._rows.get("*", self.db.study_rows)

    def row(self, name: str) -> StudyRow:
        found = self._rows.get(("row", name), lambda: self.db.study_row(name))
        if found is None:
            raise StudyNotFound(name)
        return found

    def fresh_rows(self) -> list[StudyRow] | None:
        """`rows()` if it is cached and fresh, else None (no database access)."""
        return self._rows.peek("*")

    def fresh_snapshot(self, name: str) -> StudySnapshot | None:
        """`snapshot(row(name))` if both are cached and fresh, else None (no database access)."""
        if self._rows.peek(("row", name)) is None:
            return None
        return self._checked.peek(name)

    def invalidate(self, name: str) -> None:
        """Forget what is cached about `name` (after this API changed it)."""
        self._rows.invalidate("*")
        self._rows.invalidate(("row", name))
        self._checked.invalidate(name)

    def snapshot(self, row: StudyRow) -> StudySnapshot:
        """The study's trials, at most `revalidate_s` old; rebuilt only when the study changed."""
        return self._checked.get(row.name, lambda: self._current(row))

    def _current(self, row: StudyRow) -> StudySnapshot:
        fingerprint = self.db.fingerprint(row.study_id)
        with self._lock:
            cached = self._snapshots.get(row.name)
            if cached is not None and cached.fingerprint == fingerprint:
                self._snapshots.move_to_end(row.name)
                return cached
            lock = self._build_locks.setdefault(row.name, threading.Lock())
        with lock:
            with self._lock:
                cached = self._snapshots.get(row.name)
            if cached is not None and cached.fingerprint == fingerprint:
                return cached
            fingerprint = self.db.fingerprint(row.study_id)
            fresh = StudySnapshot(fingerprint, row.direction, self._records(row, cached))
            # A big snapshot is hundreds of thousands of long-lived objects; left to the cyclic GC
            # they make every full collection a latency spike. Frozen, only refcounting frees
            # them (records hold no cycles), which it does when the snapshot is replaced.
            gc.collect()
            gc.freeze()
            with self._lock:
                self._snapshots[row.name] = fresh
                self._snapshots.move_to_end(row.name)
                while len(self._snapshots) > self._max:
                    self._snapshots.popitem(last=False)
            return fresh

    def _records(self, row: StudyRow, cached: StudySnapshot | None) -> list:
        """All trial records: the cached ones updated with those that may have changed (new,
        unfinished before, or with rows added since), or a full read when there is no usable cache
        or most of the study changed."""
        if cached is None or cached.fingerprint.study_id != row.study_id:
            return self.db.trials(row.study_id)
        unfinished = {t.trial_id for t in cached.trials if not t.finished}
        known = max((t.trial_id for t in cached.trials), default=0)
        changed = self.db.changed_trial_ids(row.study_id, cached.fingerprint, unfinished, known)
        if len(changed) > max(_MAX_INCREMENTAL, len(cached.trials) // 4):
            return self.db.trials(row.study_id)
        merged = {t.trial_id: t for t in cached.trials}
        if changed:
            merged.update((t.trial_id, t) for t in self.db.trials(row.study_id, only=changed))
        return sorted(merged.values(), key=lambda t: t.number)

    def close(self) -> None:
        self.storage.engine.dispose()


def _engine_kwargs(db_url: str) -> dict:
    """SQLite: wait for a sweep's write lock instead of failing at once (readers share the file)."""
    if sqlalchemy.engine.make_url(db_url).get_backend_name() == "sqlite":
        return {"connect_args": {"timeout": 30}}
    return {"pool_pre_ping": True}
