"""When training has diverged (thesis §4.4): a step whose loss is non-finite or above twice a uniform
prediction's, or whose gradient norm is non-finite. The loop then restores the best checkpoint.

On CPU every step is checked as it ends. On CUDA reading a loss or a norm makes the host wait for
the GPU, twice a step; there the checks accumulate on the device and are read once every
`CHECK_EVERY_CUDA` steps and before every evaluation and checkpoint. A divergence is then found up
to that many steps late: the steps in between ran on broken weights, which the restore replaces,
so recovery keeps its meaning (best checkpoint, learning rate x 0.9) at the cost of a few wasted
steps, and no evaluation or checkpoint ever sees them.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

# A training loss above this multiple of ln(vocabulary size) nats/token — twice the loss of a
# uniform prediction — counts as exploded, as does a non-finite loss or gradient norm.
EXPLOSION_FACTOR = 2.0
# On CUDA, steps between two reads of the accumulated checks (one host synchronisation each).
CHECK_EVERY_CUDA = 16


class Watch:
    """The divergence checks of one run, immediate (`every` = 1) or accumulated on the device."""

    def __init__(self, vocab_size: int, device: torch.device) -> None:
        self.explosion = EXPLOSION_FACTOR * math.log(max(2, vocab_size))
        self.every = CHECK_EVERY_CUDA if device.type == "cuda" else 1
        self._bad: Tensor | None = None
        self._loss_sum: Tensor | None = None
        self._steps = 0

    def loss_problem(self, per_token: float) -> str | None:
        """Why this step's loss means divergence (immediate checks), None when it does not."""
        if not math.isfinite(per_token) or per_token > self.explosion:
            return f"training loss {per_token:.4g} nats/token"
        return None

    def add(self, per_token: Tensor, norm: Tensor) -> None:
        """Accumulate one step's checks on the device, without reading them."""
        bad = ~torch.isfinite(per_token) | (per_token > self.explosion) | ~torch.isfinite(norm)
        self._bad = bad if self._bad is None else self._bad | bad
        self._loss_sum = per_token if self._loss_sum is None else self._loss_sum + per_token
        self._steps += 1

    @property
    def pending(self) -> int:
        """Steps accumulated since the last read."""
        return self._steps

    def read(self) -> tuple[float, bool]:
        """The mean training loss of the accumulated steps and whether any of them diverged (one
        host synchronisation); clears the accumulators."""
        assert self._bad is not None and self._loss_sum is not None
        both = torch.stack([self._loss_sum / self._steps, self._bad.to(self._loss_sum.dtype)]).tolist()
        self._bad, self._loss_sum, self._steps = None, None, 0
        return float(both[0]), bool(both[1])
