"""When training has diverged (thesis §4.4): a step whose loss or gradient norm is non-finite, or a
window of steps whose mean loss is above twice a uniform prediction's. The loop then restores the
best checkpoint.

The explosion is judged on a window's mean, not on one step: Adam's first steps with β1 = 0 can
spike one step's loss to 2.6 times a uniform prediction's and recover within two steps (the
Mogrifier paper's recipe at 24M weights, docs/gpu.md); a one-step rule failed 14 of 20 such trials.

On CPU a non-finite loss or gradient is caught as its step ends, before the update. On CUDA reading
a loss or a norm makes the host wait for the GPU, twice a step; there the checks accumulate on the
device and are read once a window and before every evaluation and checkpoint. A divergence is then
found up to a window late: the steps in between ran on broken weights, which the restore replaces,
so recovery keeps its meaning (best checkpoint, learning rate x 0.9) at the cost of a few wasted
steps, and no evaluation or checkpoint ever sees them. Both devices judge the same windows.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

# A window's mean training loss above this multiple of ln(vocabulary size) nats/token — twice the
# loss of a uniform prediction — counts as exploded.
EXPLOSION_FACTOR = 2.0
# Steps in a window: the explosion is judged on their mean loss; on CUDA, one host read per window.
WINDOW = 16


class Watch:
    """The divergence checks of one run, accumulated on the run's device and read once a window."""

    def __init__(self, vocab_size: int, device: torch.device, explosions: bool = True) -> None:
        """`explosions=False` reports only non-finite values: a finite loss explosion trains on, as
        lamb does (`divergence: lamb`; lamb/main.py fails a trial only on a non-finite norm)."""
        self.explosion = EXPLOSION_FACTOR * math.log(max(2, vocab_size)) if explosions else math.inf
        self.every = WINDOW
        # CPU: the loop also checks each step's loss and gradient norm for non-finite values at once.
        self.immediate = device.type != "cuda"
        self._bad: Tensor | None = None
        self._loss_sum: Tensor | None = None
        self._steps = 0

    def add(self, per_token: Tensor, norm: Tensor) -> None:
        """Accumulate one step's checks on the device, without reading them."""
        bad = ~torch.isfinite(per_token) | ~torch.isfinite(norm)
        self._bad = bad if self._bad is None else self._bad | bad
        self._loss_sum = per_token if self._loss_sum is None else self._loss_sum + per_token
        self._steps += 1

    @property
    def pending(self) -> int:
        """Steps accumulated since the last read."""
        return self._steps

    def read(self) -> tuple[float, str | None]:
        """The mean training loss of the accumulated steps, and why they diverged (None when they
        did not); one host synchronisation. Clears the accumulators."""
        assert self._bad is not None and self._loss_sum is not None
        n = self._steps
        both = torch.stack([self._loss_sum / n, self._bad.to(self._loss_sum.dtype)]).tolist()
        self._bad, self._loss_sum, self._steps = None, None, 0
        mean, bad = float(both[0]), bool(both[1])
        if bad or not math.isfinite(mean):
            return mean, f"a non-finite loss or gradient within the last {n} steps"
        if mean > self.explosion:
            return mean, (
                f"mean training loss {mean:.4g} nats/token over the last {n} steps, above twice a "
                f"uniform prediction's {self.explosion:.3g}"
            )
        return mean, None
