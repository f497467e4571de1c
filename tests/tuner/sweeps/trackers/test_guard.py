"""A tracker's failures never reach the trial: counted, said once, the tracker off for the sweep."""

from __future__ import annotations

import threading
from typing import Any

from tuner.sweeps.trackers.guard import Guard, merged
from tuner.sweeps.trackers.records import Ending, Point


class Recorder:
    """A tracker that records its calls; `broken` makes every call from the given one on raise."""

    name = "fake"

    def __init__(self, broken_from: str | None = None, block: threading.Event | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self._broken_from = broken_from
        self._broken = False
        self._block = block

    def _do(self, method: str, *args: Any) -> None:
        if self._block is not None:
            self._block.wait()
        if method == self._broken_from:
            self._broken = True
        if self._broken:
            raise OSError(28, "No space left on device")
        self.calls.append((method, args))

    def begin(self) -> None:
        self._do("begin")

    def start_trial(self, number, params) -> None:
        self._do("start_trial", number)

    def log(self, number, point) -> None:
        self._do("log", number, point.step)

    def end_trial(self, number, ending) -> None:
        self._do("end_trial", number, ending.state)

    def close(self, status) -> None:
        self._do("close", status)


def _sweep(guard: Guard) -> None:
    guard.call("start_trial", 0, {"lr": 0.1})
    guard.call("log", 0, Point(10, {"val_loss": 4.0}))
    guard.call("log", 0, Point(20, {"val_loss": 3.5}))
    guard.call("end_trial", 0, Ending("COMPLETE", 3.5))


def test_a_working_tracker_gets_every_call_in_order_and_no_failure():
    tracker, warnings = Recorder(), []
    guard = Guard(tracker, warnings.append)
    _sweep(guard)
    assert guard.close("finished") == 0
    assert tracker.calls == [
        ("begin", ()),
        ("start_trial", (0,)),
        ("log", (0, 10)),
        ("log", (0, 20)),
        ("end_trial", (0, "COMPLETE")),
        ("close", ("finished",)),
    ]
    assert warnings == []


def test_a_failing_tracker_is_said_once_and_every_missed_call_counted():
    tracker, warnings = Recorder(broken_from="log"), []
    guard = Guard(tracker, warnings.append)
    _sweep(guard)
    # Both logs, the ending and the close are missed: the first fails, the rest are skipped.
    assert guard.close("finished") == 4
    assert tracker.calls == [("begin", ()), ("start_trial", (0,))]
    assert len(warnings) == 1
    assert "fake: OSError: [Errno 28] No space left on device" in warnings[0]
    assert "tracker_failures" in warnings[0]


def test_a_tracker_that_hangs_never_holds_the_caller_and_its_queue_counts_at_close():
    block, warnings = threading.Event(), []
    guard = Guard(Recorder(block=block), warnings.append)
    _sweep(guard)  # returns at once although `begin` hangs
    try:
        failures = guard.close("finished", timeout_s=0.2)
    finally:
        block.set()
    # begin in progress, 4 queued calls and close: 6 records not written.
    assert failures == 6
    assert len(warnings) == 1 and "still writing after 0.2 s" in warnings[0]


def test_failures_add_to_the_stored_counts():
    assert merged(None, {"tensorboard": 0, "mlflow": 3}) == {"mlflow": 3}
    assert merged({"mlflow": 3}, {"mlflow": 2, "tensorboard": 1}) == {"mlflow": 5, "tensorboard": 1}
