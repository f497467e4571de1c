"""Two-Tailed Averaging (thesis §3.4, Algorithm 2)."""

from __future__ import annotations

import math

import torch

from trainer.averaging import TwoTailedAverage
from trainer.tail import STAGNATION_PATIENCE


def test_long_average_beats_raw_iterate_on_noisy_quadratic():
    torch.manual_seed(0)
    theta = torch.full((50,), 3.0)
    lr, noise, e = 0.05, 1.0, 20
    avg = TwoTailedAverage(eval_every=e)

    def f(w):
        x = theta if w is None else w[0]
        return float((x**2).sum())

    decisions = []
    for t in range(1, 2001):
        grad = 2 * theta + noise * torch.randn_like(theta)
        theta -= lr * grad
        avg.add_weights([theta])
        if t % e == 0:
            decisions.append(avg.evaluate_and_adapt(f))
    last = decisions[-1]
    assert last.source == "long" and last.length > e
    assert last.loss < 0.2 * last.raw_loss
    assert any(d.switched for d in decisions[1:])


class Scripted:
    """A loss function answering from a script of (raw, short, long) losses, one row per evaluation."""

    def __init__(self, avg: TwoTailedAverage, rows):
        self.avg, self.rows, self.i = avg, list(rows), -1

    def next(self):
        self.i += 1
        return self.rows[self.i]

    def __call__(self, weights):
        raw, short, long = self.rows[self.i]
        if weights is None:
            return raw
        return short if weights is self.avg.short.weights else long


def run(avg, script, steps):
    out = []
    for _ in range(len(script.rows)):
        for _ in range(steps):
            avg.add_weights([torch.zeros(1)])
        script.next()
        out.append(avg.evaluate_and_adapt(script))
    return out


def test_first_evaluation_switches_and_short_restarts():
    avg = TwoTailedAverage(eval_every=5)
    d = run(avg, Scripted(avg, [(2.0, 1.0, 1.0)]), 5)[0]
    assert d.switched and avg.long.length == 5 and avg.short.length == 0
    assert d.loss == 1.0 and d.source == "long"


def test_no_switch_while_long_is_better_then_switch_when_short_catches_up():
    avg = TwoTailedAverage(eval_every=5)
    rows = [(2.0, 1.0, 1.0), (1.5, 0.9, 0.8), (1.4, 0.7, 0.75)]
    ds = run(avg, Scripted(avg, rows), 5)
    assert not ds[1].switched and ds[1].loss == 0.8 and ds[1].length == 10
    assert ds[2].switched and ds[2].loss == 0.7 and ds[2].length == 10 and avg.short.length == 0


def test_stagnating_short_average_is_reset():
    avg = TwoTailedAverage(eval_every=1)
    rows = [(9.0, 1.0, 1.0)] + [(9.0, 5.0 + i, 0.5 - 0.01 * i) for i in range(STAGNATION_PATIENCE + 1)]
    ds = run(avg, Scripted(avg, rows), 1)
    # The fresh short average's first loss sets its best; then PATIENCE evaluations without improvement.
    assert not any(d.reset_short for d in ds[: STAGNATION_PATIENCE + 1])
    assert ds[STAGNATION_PATIENCE + 1].reset_short and avg.short.length == 0


def test_stagnating_long_average_forces_a_switch():
    avg = TwoTailedAverage(eval_every=1)
    # Long average stuck at 0.5 (never improving), short one better than its own past but worse than long.
    rows = [(9.0, 0.5, 0.5)] + [(9.0, 3.0 - 0.1 * i, 0.5) for i in range(STAGNATION_PATIENCE)]
    ds = run(avg, Scripted(avg, rows), 1)
    assert not ds[1].switched
    assert ds[STAGNATION_PATIENCE].switched


def test_raw_weights_win_early_and_reinitialize():
    avg = TwoTailedAverage(eval_every=4)
    ds = run(avg, Scripted(avg, [(0.5, 1.0, 1.0)]), 4)
    assert ds[0].source == "raw" and ds[0].length == 1 and ds[0].loss == 0.5
    assert ds[0].reinitialized and avg.long.length == 0 and avg.short.length == 0


def test_running_means_are_exact():
    avg = TwoTailedAverage(eval_every=3)
    for v in (1.0, 2.0, 6.0):
        avg.add_weights([torch.tensor([v])])
    assert math.isclose(avg.long.weights[0].item(), 3.0) and avg.long.length == 3


def test_state_dict_round_trip():
    avg = TwoTailedAverage(eval_every=2)
    avg.add_weights([torch.tensor([1.0])])
    other = TwoTailedAverage(eval_every=7)
    other.load_state_dict(avg.state_dict())
    assert other.eval_every == 2 and other.long.length == 1 and other.long.weights[0].item() == 1.0
