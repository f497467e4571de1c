"""Suggestions made before they are needed, so a free GPU never waits for the sampler.

Ray Tune asks the searcher for a trial only when a slot is free, and a GP suggestion takes about a
second: with many short trials in flight the driver's suggestion time becomes GPU time lost
(docs/gpu.md, driver benchmarks). `AskAhead` keeps up to `depth` results of `make` ready, made one
at a time in a background thread while the trials run; the searcher takes a ready one at once.
What `make` produces is a trial already asked of the study, so the sampler sees it as pending (the
default sampler imputes pending trials) and the next suggestion is chosen knowing about it.

Hand-written (a thread and a condition), not a thread pool: one maker at a time keeps the study's
asks in order, and `take` must be able to wait for the one being made instead of starting another.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

# Bounds of the depth: at least 2 (one being taken while one is made); at most 8, since each trial
# asked ahead is one more pending point in every later suggestion's q-logEI (its cost grows with them).
MIN_DEPTH, MAX_DEPTH = 2, 8


def depth_for(parallel: int) -> int:
    """Trials to keep asked ahead with `parallel` in flight: half of them, within the bounds.

    ASHA stops many trials at one rung together, so slots free up in bursts; a depth that grows with
    the trials in flight absorbs a burst while the one asker catches up (bench/driver_scale.py,
    16 in flight: the driver leaves GPUs idle 3.9% of the time with 2 ahead, 0.96% with 8; docs/gpu.md).
    """
    return max(MIN_DEPTH, min(MAX_DEPTH, parallel // 2))


class AskAhead(Generic[T]):
    """Up to `depth` results of `make()` kept ready; `may_make(count)` says whether one more may be
    made when `count` are ready or being made (the caller's budget and stop rules)."""

    def __init__(self, make: Callable[[], T], depth: int, may_make: Callable[[int], bool]) -> None:
        self._make = make
        self._depth = depth
        self._may_make = may_make
        self._ready: deque[T] = deque()
        self._making = False
        self._error: BaseException | None = None
        self._closed = False
        self._changed = threading.Condition()

    def take(self) -> T | None:
        """A ready result, waiting for the one being made if none is ready; None when none is ready
        or being made (the caller makes one itself). Re-raises what the last `make` raised."""
        with self._changed:
            while not self._ready and self._making:
                self._changed.wait()
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            return self._ready.popleft() if self._ready else None

    def refill(self) -> None:
        """Start making the next result in the background if there is room and `may_make` agrees."""
        with self._changed:
            if self._closed or self._making or self._error is not None or len(self._ready) >= self._depth:
                return
            if not self._may_make(len(self._ready)):
                return
            self._making = True
        threading.Thread(target=self._run, name="rnntune-ask-ahead", daemon=True).start()

    def _run(self) -> None:
        try:
            made = self._make()
        except BaseException as err:  # handed to the next `take`, which raises it in the caller
            with self._changed:
                self._error, self._making = err, False
                self._changed.notify_all()
            return
        with self._changed:
            self._ready.append(made)
            self._making = False
            self._changed.notify_all()
        self.refill()

    def settle(self, timeout: float | None = None) -> int:
        """Wait until no result is being made; how many are ready."""
        with self._changed:
            self._changed.wait_for(lambda: not self._making, timeout=timeout)
            return len(self._ready)

    def close(self) -> list[T]:
        """Stop making more, wait for the one being made, and hand back every result not taken."""
        with self._changed:
            self._closed = True
            while self._making:
                self._changed.wait()
            left = list(self._ready)
            self._ready.clear()
            return left
