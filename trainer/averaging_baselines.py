"""The averaging baselines of thesis §3.6 (Figure 3.3), each with the hyperparameter 2TA does without.

`averaging: ema` (`ExponentialAverage`): an exponential moving average of every iterate, thesis
§3.2 eq. (3.1) with a constant β_t = `ema_decay`: θ̄_0 = θ_0, θ̄_t = (1 − β)θ_t + βθ̄_{t−1}.

`averaging: tail` (`FixedTailAverage`): Tail Averaging from a fixed step s = `tail_start`, thesis
§3.2 eq. (3.2): θ̄_t = θ_t for t < s, the equally weighted mean of θ_s … θ_t for t ≥ s.

Both report the average's validation loss at every evaluation once it holds an iterate (before s,
Tail Averaging's θ̄_t is the raw θ_t, so the raw weights are reported). Steps count from 1: the
iterate after the first optimizer step is θ_1, the initial weights θ_0 are never averaged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from .tail import Decision, Tail, to_device


def _report(long: Tail, f: Callable[[list[Tensor] | None], float]) -> Decision:
    """The raw loss, and the average's when it holds an iterate (then reported), else the raw one."""
    f_raw = f(None)
    if not long.length:
        return Decision(f_raw, "raw", 1, f_raw, math.inf, math.inf)
    f_avg = f(long.weights)
    return Decision(f_avg, "long", long.length, f_raw, f_avg, f_avg)


@dataclass
class ExponentialAverage:
    """Eq. (3.1) with constant β = `decay`; `long.length` counts the iterates it has seen."""

    decay: float
    long: Tail = field(default_factory=Tail)

    def add_weights(self, params: list[Tensor]) -> None:
        """θ̄ ← (1 − β)θ_t + βθ̄ (the first iterate starts the average, eq. (3.1)'s θ̄_0)."""
        self.long.length += 1
        if self.long.weights is None:
            self.long.weights = [p.detach().clone() for p in params]
            return
        for avg, p in zip(self.long.weights, params):
            avg.lerp_(p.detach(), 1.0 - self.decay)

    def evaluate_and_adapt(self, f: Callable[[list[Tensor] | None], float], step: int = 0) -> Decision:
        """The moving average's loss; it adapts to nothing (`step` is the averagers' shared call)."""
        return _report(self.long, f)

    def state_dict(self) -> dict:
        return {"kind": "ema", "long": {"length": self.long.length, "weights": self.long.weights}}

    def load_state_dict(self, state: dict, device: torch.device | str | None = None) -> None:
        if state.get("kind") != "ema":
            raise ValueError("the checkpoint's averaging state is not averaging: ema")
        self.long = Tail(state["long"]["length"], to_device(state["long"]["weights"], device))


@dataclass
class FixedTailAverage:
    """Eq. (3.2) with s = `start`: iterates θ_t with t ≥ s enter an equally weighted mean."""

    start: int
    long: Tail = field(default_factory=Tail)
    step: int = 0

    def add_weights(self, params: list[Tensor]) -> None:
        """θ_t (t counted here from 1) enters the tail once t ≥ s."""
        self.step += 1
        if self.step >= self.start:
            self.long.add(params)

    def evaluate_and_adapt(self, f: Callable[[list[Tensor] | None], float], step: int = 0) -> Decision:
        """The tail average's loss from step s on, the raw weights' before (θ̄_t = θ_t, t < s)."""
        return _report(self.long, f)

    def state_dict(self) -> dict:
        long = {"length": self.long.length, "weights": self.long.weights}
        return {"kind": "tail", "step": self.step, "long": long}

    def load_state_dict(self, state: dict, device: torch.device | str | None = None) -> None:
        if state.get("kind") != "tail":
            raise ValueError("the checkpoint's averaging state is not averaging: tail")
        self.step = state["step"]
        self.long = Tail(state["long"]["length"], to_device(state["long"]["weights"], device))
