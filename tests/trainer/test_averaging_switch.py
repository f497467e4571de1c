"""The Mogrifier paper's averaging switch (§3.3): `averaging: switch`.

"We switch to averaging weights ... after a certain number of checkpoints with no improvement in
validation cross-entropy or at 80% of the training time at the latest."
"""

from __future__ import annotations

import json

import pytest
import torch

from tests.trainer.test_loop import tiny
from trainer import make_config, train
from trainer.averaging import SWITCH_AT_LATEST, SwitchAveraging, TwoTailedAverage, make_averaging


class Weights:
    """One scalar parameter whose value at step t is t; the loss of weights is their value."""

    def __init__(self) -> None:
        self.theta = torch.zeros(1)

    def step(self, avg: SwitchAveraging) -> None:
        self.theta += 1.0
        avg.add_weights([self.theta])


def evaluate(avg: SwitchAveraging, weights: Weights, raw_loss: float, step: int):
    return avg.evaluate_and_adapt(lambda w: raw_loss if w is None else float(w[0]), step)


def test_switch_after_patience_evaluations_without_improvement():
    avg, w = SwitchAveraging(patience=3, latest_step=10_000), Weights()
    raw = [5.0, 4.0, 4.0, 3.0, 3.5, 3.2, 3.1, 2.0]  # best 3.0 at the 4th; then 3 without improvement
    decisions = []
    for i, loss in enumerate(raw, start=1):
        for _ in range(10):
            w.step(avg)
        decisions.append(evaluate(avg, w, loss, 10 * i))
    switched = [d.switched for d in decisions]
    assert switched == [False] * 6 + [True, False]  # the 3rd evaluation's non-improvement is reset
    assert all(d.source == "raw" and d.loss == d.raw_loss for d in decisions[:7])
    last = decisions[-1]  # 10 iterates after the switch at step 70: θ = 71 … 80, mean 75.5
    assert last.source == "long" and last.length == 10 and last.loss == pytest.approx(75.5)
    assert last.raw_loss == 2.0


def test_switch_at_eighty_percent_at_the_latest():
    cfg = make_config({"averaging": "switch", "max_steps": 100, "eval_every": 10, "averaging_patience": 50})
    avg, w = make_averaging(cfg), Weights()
    assert isinstance(avg, SwitchAveraging) and avg.latest_step == 80 == SWITCH_AT_LATEST * 100
    decisions = {}
    for step in range(1, 101):
        w.step(avg)
        if step % 10 == 0:
            decisions[step] = evaluate(avg, w, 10.0 - step / 100, step)  # always improving
    assert [s for s, d in decisions.items() if d.switched] == [80]
    assert decisions[90].length == 10 and decisions[100].length == 20
    assert decisions[100].loss == pytest.approx(sum(range(81, 101)) / 20)  # eq. (3.2), s = 81


def test_state_round_trip_and_the_default_is_2ta():
    avg, w = SwitchAveraging(patience=1, latest_step=10), Weights()
    for step in (1, 2):
        w.step(avg)
        evaluate(avg, w, 1.0, step)  # no improvement at step 2: switch on
    w.step(avg)
    other = SwitchAveraging(patience=1, latest_step=10)
    other.load_state_dict(avg.state_dict())
    assert other.on and other.long.length == 1 and torch.equal(other.long.weights[0], avg.long.weights[0])
    with pytest.raises(ValueError, match="not averaging: switch"):
        other.load_state_dict(TwoTailedAverage(eval_every=5).state_dict())
    assert isinstance(make_averaging(make_config({})), TwoTailedAverage)


def test_trainer_reports_raw_weights_then_the_tail_average(tmp_path):
    cfg = tiny(tmp_path, averaging="switch", max_steps=50, eval_every=10, optimizer="adam")
    train(cfg)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["avg_length"] for r in rows] == [1, 1, 1, 1, 10]  # switch at step 40 = 80% of 50
    assert all(r["val_loss"] == r["raw_val_loss"] for r in rows[:4])
    assert rows[4]["val_loss"] != rows[4]["raw_val_loss"]
