"""The sweep driver's hold on its study: the driver lease kept in a background thread, and the stop
requests that end a sweep cleanly (a stored request from any API instance, SIGINT or SIGTERM).

The thread renews the lease every `HEARTBEAT_S` and looks for a stored stop request every
`STOP_POLL_S`, so a stop reaches the driver whatever its main loop is doing (starting Ray,
sampling, waiting on trials). A driver that finds its lease taken over stops too: another driver
owns the study now.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tuner.lease import (
    HEARTBEAT_S,
    STOP_POLL_S,
    acquire,
    begin,
    lease_engine,
    new_owner,
    read,
    release,
    renew,
)
from tuner.study import StudyError


class DriverBusy(StudyError):
    """Another live driver holds the study's lease."""


class StopRequest:
    """Why the sweep must stop (None: it runs on); set by a signal handler or the lease thread."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def set(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason


class LeaseKeeper:
    """Holds the study's driver lease for this process while the sweep runs."""

    def __init__(
        self, storage_url: str, name: str, request: StopRequest, generation: int | None = None
    ) -> None:
        """`generation`: the start this driver serves (given by the API that launched it); None
        registers a new start, as a sweep run from the command line is one."""
        self._engine = lease_engine(storage_url)
        self._name = name
        self._request = request
        self.owner = new_owner()
        self.generation = generation if generation is not None else begin(self._engine, name)
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> None:
        """Take the lease (DriverBusy if another live driver holds it) and start keeping it."""
        if acquire(self._engine, self._name, self.owner) is None:
            held = read(self._engine, self._name)
            holder = held.describe() if held is not None else "another driver"
            self._engine.dispose()
            raise DriverBusy(f"study {self._name!r} is being run by {holder}; stop that sweep first")
        self._check(read(self._engine, self._name))
        self._thread = threading.Thread(target=self._keep, daemon=True, name="rnntune-lease")
        self._thread.start()

    def _check(self, lease: Any) -> None:
        if lease is None or lease.owner != self.owner:
            self._request.set("another driver took over the study's lease")
        elif lease.stops(self.generation):
            self._request.set(lease.stop_reason or "stop requested")

    def _keep(self) -> None:
        renewed = time.monotonic()
        while not self._done.wait(STOP_POLL_S):
            try:
                if time.monotonic() - renewed >= HEARTBEAT_S:
                    lease = renew(self._engine, self._name, self.owner)
                    renewed = time.monotonic()
                else:
                    lease = read(self._engine, self._name)
            except Exception:  # database briefly unreachable: keep trying until the lease expires
                continue
            self._check(lease)

    def close(self) -> None:
        """Stop keeping the lease and give it back."""
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        try:
            release(self._engine, self._name, self.owner)
        finally:
            self._engine.dispose()


@contextmanager
def stop_on_signals(request: StopRequest) -> Iterator[None]:
    """First SIGINT/SIGTERM asks for a clean stop; a second SIGINT interrupts at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if request.reason is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        request.set(f"sweep stopped by {signal.Signals(signum).name}")

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
