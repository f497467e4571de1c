"""Runs one tracker so that it can neither fail nor stall a trial: its calls go, in order, to a
thread of its own; the first failure is said once and turns the tracker off for the rest of the
sweep (a server that is down would otherwise cost every later call its retries), and every call
that failed or was skipped is counted. The driver adds the counts to the study's
`tracker_failures` attribute (`merged`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import optuna

from tuner.storage import study_attrs
from tuner.sweeps.trackers.records import Ending, Point

# How long the end of a sweep waits for a tracker to write what is queued (a slow or unreachable
# server); what is left then counts as failed.
CLOSE_TIMEOUT_S = 30.0


class Tracker(Protocol):
    """Where trials are logged. Every method runs on the tracker's own thread, in call order."""

    name: str

    def begin(self) -> None:
        """Open the tracker for the sweep (an MLflow experiment and parent run)."""
        ...

    def start_trial(self, number: int, params: Mapping[str, Any]) -> None: ...

    def log(self, number: int, point: Point) -> None: ...

    def end_trial(self, number: int, ending: Ending) -> None: ...

    def close(self, status: str) -> None:
        """End the sweep's logging with the study's status (`finished`, `stopped`, `failed`)."""
        ...


class Guard:
    """One tracker behind a queue and a thread: `call` never raises and never waits on the tracker."""

    def __init__(self, tracker: Tracker, warn: Callable[[str], None]) -> None:
        self.name = tracker.name
        self._tracker = tracker
        self._warn = warn
        self._queue: queue.Queue[tuple[str, tuple[Any, ...]] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._failures = 0
        self._down = False
        self._thread = threading.Thread(target=self._work, daemon=True, name=f"rnntune-{self.name}")
        self._thread.start()
        self.call("begin")

    @property
    def failures(self) -> int:
        """Calls that failed or were skipped because the tracker had failed before."""
        with self._lock:
            return self._failures

    def call(self, method: str, *args: Any) -> None:
        """Queue `tracker.method(*args)`."""
        self._queue.put((method, args))

    def close(self, status: str, timeout_s: float = CLOSE_TIMEOUT_S) -> int:
        """Queue `close(status)`, wait up to `timeout_s` for the queue to drain; the failures in all
        (what is still queued then, and the call in progress, counted among them)."""
        self.call("close", status)
        self._queue.put(None)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            left = self._queue.qsize()  # the sentinel among them stands for the call in progress
            self._fail(f"still writing after {timeout_s:g} s; {left} records dropped", count=left)
        return self.failures

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            method, args = item
            if self._down:
                self._fail(None)
                continue
            try:
                getattr(self._tracker, method)(*args)
            except Exception as err:  # a tracker's failure (server down, disk full) is never the trial's
                self._fail(f"{type(err).__name__}: {err}")

    def _fail(self, why: str | None, count: int = 1) -> None:
        with self._lock:
            self._failures += count
            first, self._down = not self._down, True
        if first and why is not None:
            self._warn(
                f"warning: {self.name}: {why.splitlines()[0][:300]}; nothing more is sent to it in this "
                f"sweep (trials go on; missed records are counted in the study's tracker_failures)"
            )


def merged(stored: Any, counts: Mapping[str, int]) -> dict[str, int]:
    """The study's `tracker_failures` after this sweep: the stored counts plus this sweep's."""
    total = {k: int(v) for k, v in stored.items()} if isinstance(stored, Mapping) else {}
    for name, count in counts.items():
        if count:
            total[name] = total.get(name, 0) + count
    return total


def count_tracker_failures(study: optuna.Study, failures: Mapping[str, int]) -> None:
    """Add this sweep's tracker failures to the study's `tracker_failures` (nothing when none)."""
    if any(failures.values()):
        stored = study_attrs.TRACKER_FAILURES.of(study.user_attrs)
        study_attrs.TRACKER_FAILURES.write(study, merged(stored, failures))
