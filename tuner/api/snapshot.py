"""An in-memory snapshot of one study's trials, with orderings and derived results memoised.

Why: list pages, sorts and the sensitivity analysis of a 10,000-trial study must answer in
milliseconds; a snapshot is built once per study version (see `trialdb.Fingerprint`) and every
request after that slices lists that are already sorted.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from tuner.api.records import TrialRecord
from tuner.api.trialdb import Fingerprint

SORT_KEYS = ("number", "-number", "objective", "-objective")
# Derived results kept per snapshot (sensitivity and plots for a few fractions each).
MAX_MEMO = 16


class StudySnapshot:
    """Trials of one study at one fingerprint; immutable apart from its memo of derived results."""

    def __init__(self, fingerprint: Fingerprint, direction: str, trials: list[TrialRecord]):
        self.fingerprint = fingerprint
        self.direction = direction
        self.trials = trials
        self.by_number = {t.number: t for t in trials}
        self._orders: dict[tuple[str | None, str], list[TrialRecord]] = {}
        self._memo: OrderedDict[Any, Any] = OrderedDict()
        self._pending: dict[Any, threading.Lock] = {}
        self._summaries: dict[int, str] = {}
        self._lock = threading.Lock()

    def _objective_key(self, trial: TrialRecord) -> tuple[int, float, int]:
        """Best first: finite values by objective (direction-aware), then the rest by number."""
        if trial.value is None or math.isnan(trial.value):
            return (1, 0.0, trial.number)
        sign = 1.0 if self.direction == "minimize" else -1.0
        return (0, sign * trial.value, trial.number)

    def ordered(self, state: str | None, sort: str) -> list[TrialRecord]:
        """Trials in `state` (all when None) in `sort` order (one of `SORT_KEYS`)."""
        key = (state, sort)
        with self._lock:
            found = self._orders.get(key)
        if found is not None:
            return found
        chosen = [t for t in self.trials if state is None or t.state == state]
        if sort.endswith("objective"):
            chosen.sort(key=self._objective_key, reverse=sort.startswith("-"))
        elif sort == "-number":
            chosen.reverse()
        with self._lock:
            self._orders[key] = chosen
        return chosen

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
        """The memoised result for `key`, or None if not computed yet."""
        with self._lock:
            return self._memo.get(key)

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """`compute()` once per key for this snapshot (sensitivity, plots); one caller computes."""
        with self._lock:
            if key in self._memo:
                return self._memo[key]
            pending = self._pending.setdefault(key, threading.Lock())
        with pending:
            with self._lock:
                if key in self._memo:
                    return self._memo[key]
            value = compute()
            with self._lock:
                self._memo[key] = value
                self._pending.pop(key, None)
                while len(self._memo) > MAX_MEMO:
                    self._memo.popitem(last=False)
            return value
