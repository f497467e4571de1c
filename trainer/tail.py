"""The parts the averagers share: one running mean of iterates with its loss history (`Tail`), the
`Decision` an evaluation returns, and moving saved averages to a device."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

# An average is "stagnating" (Algorithm 2, lines 3 and 6) when its loss has not improved on its
# best for this many consecutive evaluations. The thesis says "a few evaluations"; 3 keeps a
# reset quick after a change of basin while tolerating evaluation noise.
STAGNATION_PATIENCE = 3


@dataclass
class Tail:
    """One running average: its length, its mean weights and its loss history since (re)start."""

    length: int = 0
    weights: list[Tensor] | None = None
    best: float = math.inf
    since_best: int = 0

    def add(self, params: list[Tensor]) -> None:
        # θ ← θ + (θ_t − θ)/(n + 1) (Algorithm 1, lines 4-5)
        self.length += 1
        if self.weights is None or self.length == 1:
            self.weights = [p.detach().clone() for p in params]
        else:
            w = 1.0 / self.length
            for avg, p in zip(self.weights, params):
                avg.lerp_(p.detach(), w)

    def observe(self, loss: float) -> None:
        if loss < self.best:
            self.best, self.since_best = loss, 0
        else:
            self.since_best += 1

    @property
    def stagnating(self) -> bool:
        return self.since_best >= STAGNATION_PATIENCE

    def reset(self) -> None:
        self.length, self.weights, self.best, self.since_best = 0, None, math.inf, 0


@dataclass
class Decision:
    """What one evaluate_and_adapt call returns: the chosen loss, which weights, and their length."""

    loss: float
    source: str  # "long" (θ^L) or "raw" (the current iterate)
    length: int
    raw_loss: float
    short_loss: float
    long_loss: float
    switched: bool = False
    reset_short: bool = False
    reinitialized: bool = False


def to_device(weights: Any, device: torch.device | str | None) -> Any:
    """Saved averaged weights on `device` (None: where they are)."""
    if weights is None or device is None:
        return weights
    return [w.to(device) for w in weights]
