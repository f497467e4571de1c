"""Weight averaging: Two-Tailed Averaging (thesis §3.4, Algorithm 2 with both extensions), the
default, or the Mogrifier paper's switch to a tail average (§3.3), `averaging: switch`.

Two running averages of the optimizer's iterates, a short θ^S and a long θ^L. Every E steps the
loss of the raw weights, θ^S and θ^L is evaluated; when the short average is at least as good, it
becomes the long one and a fresh short one starts. Algorithm 2 adds (1) a reset of an average that
is stagnating and (2) deferring to the raw weights early in training. Hand-written: no library
implements 2TA.

The switch (`SwitchAveraging`) evaluates the raw weights until they have not improved for
`averaging_patience` evaluations, or until 80% of `max_steps` at the latest, then averages every
later iterate: Tail Averaging, thesis §3.2 eq. (3.2), with s the step of that evaluation.

`averaging: none` (`NoAveraging`) averages nothing: Maupomé & Meurs keep the best raw weights (§5.1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from .config import TrainConfig

# An average is "stagnating" (Algorithm 2, lines 3 and 6) when its loss has not improved on its
# best for this many consecutive evaluations. The thesis says "a few evaluations"; 3 keeps a
# reset quick after a change of basin while tolerating evaluation noise.
STAGNATION_PATIENCE = 3
# Mogrifier paper §3.3: averaging starts "at 80% of the training time at the latest".
SWITCH_AT_LATEST = 0.8


@dataclass
class _Tail:
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


@dataclass
class TwoTailedAverage:
    """2TA state over a fixed list of parameters; `eval_every` is E of Algorithm 1."""

    eval_every: int
    short: _Tail = field(default_factory=_Tail)
    long: _Tail = field(default_factory=_Tail)

    def add_weights(self, params: list[Tensor]) -> None:
        """Algorithm 1, add_weights: θ_t enters both averages."""
        self.short.add(params)
        self.long.add(params)

    def _switch(self) -> None:
        """Algorithm 1, switch: S, L, θ^L ← 0, S, θ^S — the short average continues as the long one."""
        self.long, self.short = self.short, _Tail()

    def evaluate_and_adapt(self, f: Callable[[list[Tensor] | None], float], step: int = 0) -> Decision:
        """Algorithm 2. `f(weights)` is the validation loss of those weights (None: the raw iterate).

        `step` (the optimizer step) is part of the averagers' shared call; 2TA adapts on losses alone.
        """
        f_raw = f(None)
        f_short = f(self.short.weights) if self.short.length else math.inf
        if self.long.length == self.short.length and self.long.length:
            f_long = f_short  # identical averages (first evaluation, or just reset): one evaluation
        else:
            f_long = f(self.long.weights) if self.long.length else math.inf
        self.short.observe(f_short)
        self.long.observe(f_long)
        d = Decision(f_long, "long", self.long.length, f_raw, f_short, f_long)
        if f_short <= f_long or self.long.stagnating:  # line 3
            d.loss = f_short  # line 4
            self._switch()  # line 5
            d.switched = True
        elif self.short.stagnating:  # line 6
            self.short.reset()  # line 7
            d.reset_short = True
        d.length = self.long.length
        if self.long.length > 1 and f_raw <= d.loss:  # line 8: the raw weights are better
            if self.long.length == self.eval_every:  # line 9: they always have been so far
                self.short.reset()  # line 10
                self.long.reset()
                d.reinitialized = True
            d.loss, d.source, d.length = f_raw, "raw", 1  # line 11
        return d

    def state_dict(self) -> dict:
        def tail(t: _Tail) -> dict:
            return {"length": t.length, "weights": t.weights, "best": t.best, "since_best": t.since_best}

        return {"eval_every": self.eval_every, "short": tail(self.short), "long": tail(self.long)}

    def load_state_dict(self, state: dict, device: torch.device | str | None = None) -> None:
        self.eval_every = state["eval_every"]
        for name in ("short", "long"):
            s = state[name]
            setattr(self, name, _Tail(s["length"], _to(s["weights"], device), s["best"], s["since_best"]))


@dataclass
class SwitchAveraging:
    """The Mogrifier paper's averaging (§3.3, after Merity et al. 2017): a one-way switch.

    Before the switch every evaluation reports the raw weights. At the first evaluation where the
    raw loss has not improved on its best for `patience` evaluations, or whose step is at least
    `latest_step` (80% of the run), averaging switches on; from then on `long` is the average of
    every later iterate (Tail Averaging, thesis §3.2 eq. (3.2), s = the switch step) and is what
    each evaluation reports.
    """

    patience: int
    latest_step: int
    long: _Tail = field(default_factory=_Tail)
    on: bool = False
    best: float = math.inf
    since_best: int = 0

    def add_weights(self, params: list[Tensor]) -> None:
        """θ_t enters the tail average once the switch is on (eq. (3.2): t ≥ s)."""
        if self.on:
            self.long.add(params)

    def evaluate_and_adapt(self, f: Callable[[list[Tensor] | None], float], step: int = 0) -> Decision:
        """The raw weights' loss, or after the switch the tail average's; `step` is the optimizer step."""
        f_raw = f(None)
        if self.on and self.long.length:
            f_avg = f(self.long.weights)
            return Decision(f_avg, "long", self.long.length, f_raw, f_avg, f_avg)
        d = Decision(f_raw, "raw", 1, f_raw, math.inf, math.inf)
        if not self.on:
            if f_raw < self.best:
                self.best, self.since_best = f_raw, 0
            else:
                self.since_best += 1
            if self.since_best >= self.patience or step >= self.latest_step:
                self.on = d.switched = True
        return d

    def state_dict(self) -> dict:
        long = {"length": self.long.length, "weights": self.long.weights}
        return {
            "kind": "switch",
            "on": self.on,
            "best": self.best,
            "since_best": self.since_best,
            "long": long,
        }

    def load_state_dict(self, state: dict, device: torch.device | str | None = None) -> None:
        if state.get("kind") != "switch":
            raise ValueError("the checkpoint's averaging state is not averaging: switch")
        self.on, self.best, self.since_best = state["on"], state["best"], state["since_best"]
        self.long = _Tail(state["long"]["length"], _to(state["long"]["weights"], device))


@dataclass
class NoAveraging:
    """No weight averaging (`averaging: none`): every evaluation reports the raw weights, and the
    run keeps the best of them in best.pt, as Maupomé & Meurs train (§5.1: "no regularization other
    than a checkpoint which keeps the best model over all epochs")."""

    def add_weights(self, params: list[Tensor]) -> None:
        """Nothing is averaged."""

    def evaluate_and_adapt(self, f: Callable[[list[Tensor] | None], float], step: int = 0) -> Decision:
        f_raw = f(None)
        return Decision(f_raw, "raw", 1, f_raw, math.inf, math.inf)

    def state_dict(self) -> dict:
        return {"kind": "none"}

    def load_state_dict(self, state: dict, device: torch.device | str | None = None) -> None:
        if state.get("kind") != "none":
            raise ValueError("the checkpoint's averaging state is not averaging: none")


Averager = TwoTailedAverage | SwitchAveraging | NoAveraging


def make_averaging(cfg: TrainConfig) -> Averager:
    """The averaging `cfg.averaging` names: 2TA every `eval_every` steps, the paper's switch, or none."""
    if cfg.averaging == "switch":
        return SwitchAveraging(cfg.averaging_patience, math.ceil(SWITCH_AT_LATEST * cfg.max_steps))
    if cfg.averaging == "none":
        return NoAveraging()
    return TwoTailedAverage(cfg.eval_every)


def chosen_weights(averager: Averager, decision: Decision) -> list[Tensor] | None:
    """The weights `decision` reports: the long average's, or None for the raw iterate."""
    if decision.source == "long" and not isinstance(averager, NoAveraging):
        return averager.long.weights
    return None


def _to(weights: Any, device: torch.device | str | None) -> Any:
    """Saved averaged weights on `device` (None: where they are)."""
    if weights is None or device is None:
        return weights
    return [w.to(device) for w in weights]


def swap_in(params: list[Tensor], weights: list[Tensor]) -> list[Tensor]:
    """Copy `weights` into `params` in place and return the previous values (to swap back)."""
    saved = [p.detach().clone() for p in params]
    with torch.no_grad():
        for p, w in zip(params, weights):
            p.copy_(w)
    return saved
