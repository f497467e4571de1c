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

Thesis §3.6's baselines (Figure 3.3): `ema` and `tail` (averaging_baselines.py), and `2ta_train`
(`TrainLossTwoTailedAverage`), 2TA switching on training rather than validation losses.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from .averaging_baselines import ExponentialAverage, FixedTailAverage
from .config import TrainConfig
from .tail import Decision, Tail, to_device

# Mogrifier paper §3.3: averaging starts "at 80% of the training time at the latest".
SWITCH_AT_LATEST = 0.8


@dataclass
class TwoTailedAverage:
    """2TA state over a fixed list of parameters; `eval_every` is E of Algorithm 1."""

    eval_every: int
    short: Tail = field(default_factory=Tail)
    long: Tail = field(default_factory=Tail)

    def add_weights(self, params: list[Tensor]) -> None:
        """Algorithm 1, add_weights: θ_t enters both averages."""
        self.short.add(params)
        self.long.add(params)

    def _switch(self) -> None:
        """Algorithm 1, switch: S, L, θ^L ← 0, S, θ^S — the short average continues as the long one."""
        self.long, self.short = self.short, Tail()

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
        def tail(t: Tail) -> dict:
            return {"length": t.length, "weights": t.weights, "best": t.best, "since_best": t.since_best}

        return {"eval_every": self.eval_every, "short": tail(self.short), "long": tail(self.long)}

    def load_state_dict(self, state: dict, device: torch.device | str | None = None) -> None:
        self.eval_every = state["eval_every"]
        for name in ("short", "long"):
            s = state[name]
            setattr(
                self, name, Tail(s["length"], to_device(s["weights"], device), s["best"], s["since_best"])
            )


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
    long: Tail = field(default_factory=Tail)
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
        self.long = Tail(state["long"]["length"], to_device(state["long"]["weights"], device))


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


@dataclass(kw_only=True)
class TrainLossTwoTailedAverage(TwoTailedAverage):
    """2TA whose switching logic compares training losses, reporting validation losses (`averaging:
    2ta_train`): thesis §3.6, "the switching logic was based on comparison of the training losses of
    the short and long averages instead of the validation losses, but the true validation losses
    were reported". Algorithm 2 runs unchanged on `train_loss(weights)`; the weights it picks (the
    long average or the raw iterate, line 11) are then evaluated by `f`, the validation loss."""

    train_loss: Callable[[list[Tensor] | None], float]

    def evaluate_and_adapt(self, f: Callable[[list[Tensor] | None], float], step: int = 0) -> Decision:
        picked = super().evaluate_and_adapt(self.train_loss, step)
        f_raw = f(None)
        loss = f(self.long.weights) if picked.source == "long" else f_raw
        return Decision(loss, picked.source, picked.length, f_raw, math.inf, loss, picked.switched)


Averager = TwoTailedAverage | SwitchAveraging | NoAveraging | ExponentialAverage | FixedTailAverage


def make_averaging(
    cfg: TrainConfig, train_loss: Callable[[list[Tensor] | None], float] | None = None
) -> Averager:
    """The averaging `cfg.averaging` names: 2TA every `eval_every` steps, the paper's switch, none,
    or a thesis §3.6 baseline (EMA, fixed-start Tail Averaging, 2TA switching on `train_loss`)."""
    if cfg.averaging == "switch":
        return SwitchAveraging(cfg.averaging_patience, math.ceil(SWITCH_AT_LATEST * cfg.max_steps))
    if cfg.averaging == "none":
        return NoAveraging()
    if cfg.averaging == "ema":
        return ExponentialAverage(cfg.ema_decay)
    if cfg.averaging == "tail":
        return FixedTailAverage(cfg.tail_start)
    if cfg.averaging == "2ta_train":
        if train_loss is None:
            raise ValueError("averaging: 2ta_train needs the training loss of given weights")
        return TrainLossTwoTailedAverage(cfg.eval_every, train_loss=train_loss)
    return TwoTailedAverage(cfg.eval_every)


def chosen_weights(averager: Averager, decision: Decision) -> list[Tensor] | None:
    """The weights `decision` reports: the long average's, or None for the raw iterate."""
    if decision.source == "long" and not isinstance(averager, NoAveraging):
        return averager.long.weights
    return None


def swap_in(params: list[Tensor], weights: list[Tensor]) -> list[Tensor]:
    """Copy `weights` into `params` in place and return the previous values (to swap back)."""
    saved = [p.detach().clone() for p in params]
    with torch.no_grad():
        for p, w in zip(params, weights):
            p.copy_(w)
    return saved
