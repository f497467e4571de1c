"""The API's read side: studies by name, and their trial snapshots cached per study version.

A snapshot is reused while the study's fingerprint (trial counts by state, last start/complete
times, intermediate values of running trials, last attr/value/param ids) is unchanged, so a study
that is not being written to is read from the database once; a running sweep costs one reload per
change. One caller rebuilds a study's snapshot while the others wait for it (no thundering herd).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import optuna
import sqlalchemy

from tuner.api.records import StudyRow
from tuner.api.snapshot import StudySnapshot
from tuner.api.trialdb import TrialDB


class StudyNotFound(LookupError):
    """No study of that name in the study database."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no study named {name!r}")
        self.name = name


class StudyStore:
    """Reads studies from one Optuna RDB URL; keeps up to `max_snapshots` studies' trials cached."""

    def __init__(self, db_url: str, max_snapshots: int = 8) -> None:
        self.db_url = db_url
        self.storage = optuna.storages.RDBStorage(db_url, engine_kwargs=_engine_kwargs(db_url))
        self.db = TrialDB(self.storage.engine)
        self._max = max_snapshots
        self._snapshots: OrderedDict[str, StudySnapshot] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def rows(self) -> list[StudyRow]:
        return self.db.study_rows()

    def row(self, name: str) -> StudyRow:
        found = self.db.study_row(name)
        if found is None:
            raise StudyNotFound(name)
        return found

    def snapshot(self, row: StudyRow) -> StudySnapshot:
        """The study's trials as of now: cached unless the study changed since the last read."""
        fingerprint = self.db.fingerprint(row.study_id)
        with self._lock:
            cached = self._snapshots.get(row.name)
            if cached is not None and cached.fingerprint == fingerprint:
                self._snapshots.move_to_end(row.name)
                return cached
            lock = self._locks.setdefault(row.name, threading.Lock())
        with lock:
            with self._lock:
                cached = self._snapshots.get(row.name)
            if cached is not None and cached.fingerprint == fingerprint:
                return cached
            fingerprint = self.db.fingerprint(row.study_id)
            fresh = StudySnapshot(fingerprint, row.direction, self.db.trials(row.study_id))
            with self._lock:
                self._snapshots[row.name] = fresh
                self._snapshots.move_to_end(row.name)
                while len(self._snapshots) > self._max:
                    self._snapshots.popitem(last=False)
            return fresh

    def close(self) -> None:
        self.storage.engine.dispose()


def _engine_kwargs(db_url: str) -> dict:
    """SQLite: wait for a sweep's write lock instead of failing at once (readers share the file)."""
    if sqlalchemy.engine.make_url(db_url).get_backend_name() == "sqlite":
        return {"connect_args": {"timeout": 30}}
    return {"pool_pre_ping": True}
