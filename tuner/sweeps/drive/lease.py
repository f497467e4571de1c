"""The sweep driver's hold on its study: the driver lease kept in background threads, fencing, and
the stop requests that end a sweep cleanly (a stored request from any API instance, SIGINT or SIGTERM).

One thread renews the lease every `HEARTBEAT_S` and looks for a stored stop request every
`STOP_POLL_S`, so a stop reaches the driver whatever its main loop is doing (starting Ray,
sampling, waiting on trials). A second thread, which never touches the database, watches the
deadline: a driver whose last successful renewal began `LEASE_TTL_S - FENCE_MARGIN_S` ago (the
database unreachable, or so slow that the lease may expire) has lost its lease. So has one that
finds the lease row held by another owner or at another epoch. A driver that lost its lease
stops its trials, writes nothing more to the study (`check` refuses, the searcher leaves its
trials RUNNING for the next driver to mark) and `run_sweep` raises `LeaseLost`.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from tuner.errors import LeaseLost
from tuner.storage import lease as leases
from tuner.storage.lease import Lease, acquire, begin, lease_engine, new_owner, read, release, renew
from tuner.storage.study import StudyError


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
    """Holds the study's driver lease for this process while the sweep runs, and fences its writes."""

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
        self.epoch = 0  # the lease's epoch this driver took it at (the fencing token)
        self.lost: str | None = None  # why this driver lost its lease; None while it holds it
        self._confirmed = 0.0  # time.monotonic() when the last successful renewal began
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._threads: list[threading.Thread] = []

    def acquire(self) -> None:
        """Take the lease (DriverBusy if another live driver holds it) and start keeping it."""
        started = time.monotonic()
        taken = acquire(self._engine, self._name, self.owner)
        if taken is None:
            held = read(self._engine, self._name)
            holder = held.describe() if held is not None else "another driver"
            self._engine.dispose()
            raise DriverBusy(f"study {self._name!r} is being run by {holder}; stop that sweep first")
        self.epoch, self._confirmed = taken.epoch, started
        self._check(taken)
        for target, label in ((self._keep, "rnntune-lease"), (self._watch, "rnntune-fence")):
            thread = threading.Thread(target=target, daemon=True, name=label)
            thread.start()
            self._threads.append(thread)

    def check(self) -> None:
        """The fence before a write to the study: renew the lease at this driver's owner and epoch
        in one compare-and-set, so the write that follows starts with the lease held for a full TTL.
        LeaseLost if the lease is lost (or was already); a database error passes through."""
        if self.lost is None:
            self._expire_if_due()
        if self.lost is not None:
            raise LeaseLost(self.lost)
        self._renew()
        if self.lost is not None:
            raise LeaseLost(self.lost)

    @property
    def holds(self) -> bool:
        """Whether this driver may still write, as far as it knows without asking the database."""
        if self.lost is None:
            self._expire_if_due()
        return self.lost is None

    def raise_if_lost(self, cause: BaseException | None = None) -> None:
        """LeaseLost (from `cause`, the error the loss led to) if this driver lost its lease."""
        if self.lost is not None:
            raise LeaseLost(self.lost) from cause

    def _lose(self, why: str) -> None:
        with self._lock:
            if self.lost is None:
                self.lost = (
                    f"driver lease of study {self._name!r} lost: {why}; this driver stopped its trials "
                    "and wrote nothing more (the next driver marks them FAIL and retries them)"
                )
                self._request.set(self.lost)

    def _expire_if_due(self) -> None:
        silent = time.monotonic() - self._confirmed
        if silent >= leases.LEASE_TTL_S - leases.FENCE_MARGIN_S:
            self._lose(
                f"not renewed for {silent:.1f} s (TTL {leases.LEASE_TTL_S:g} s, fencing margin "
                f"{leases.FENCE_MARGIN_S:g} s): the database was unreachable or too slow"
            )

    def _renew(self) -> None:
        started = time.monotonic()
        lease = renew(self._engine, self._name, self.owner, self.epoch)
        if lease is None:
            self._lose("another driver took over the study's lease")
            return
        with self._lock:
            self._confirmed = max(self._confirmed, started)
        self._check(lease)

    def _check(self, lease: Lease | None) -> None:
        if lease is None or lease.owner != self.owner or lease.epoch != self.epoch:
            self._lose("another driver took over the study's lease")
        elif lease.stops(self.generation):
            self._request.set(lease.stop_reason or "stop requested")

    def _keep(self) -> None:
        renewed = time.monotonic()
        while not self._done.wait(leases.STOP_POLL_S) and self.lost is None:
            try:
                if time.monotonic() - renewed >= leases.HEARTBEAT_S:
                    renewed = time.monotonic()
                    self._renew()
                else:
                    self._check(read(self._engine, self._name))
            except Exception:  # database briefly unreachable: `_watch` fences us if it lasts
                continue

    def _watch(self) -> None:
        """Fence on the deadline even while `_keep` hangs in a database call."""
        while not self._done.wait(min(0.5, leases.STOP_POLL_S)) and self.lost is None:
            self._expire_if_due()

    def close(self) -> None:
        """Stop keeping the lease and give it back (a lost lease is not ours to give back)."""
        self._done.set()
        for thread in self._threads:
            thread.join(timeout=30)
        try:
            if self.lost is None:
                release(self._engine, self._name, self.owner)
        except sa.exc.SQLAlchemyError:
            pass  # the database is out of reach: the lease expires on its own
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
