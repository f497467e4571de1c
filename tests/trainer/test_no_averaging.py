"""`averaging: none` (Maupomé & Meurs §5.1: "no regularization other than a checkpoint which keeps
the best model over all epochs"): raw weights at every evaluation, the best of them kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.trainer.test_loop import tiny
from trainer import load_checkpoint, make_config, train
from trainer.averaging import NoAveraging, SwitchAveraging, make_averaging
from trainer.checkpoint import read_checkpoint


def test_every_decision_is_the_raw_loss_and_the_state_is_its_kind():
    avg = make_averaging(make_config({"averaging": "none"}))
    assert isinstance(avg, NoAveraging)
    avg.add_weights([torch.ones(2)])
    decision = avg.evaluate_and_adapt(lambda weights: 0.5 if weights is None else 9.0, step=3)
    assert (decision.loss, decision.source, decision.length) == (0.5, "raw", 1)
    NoAveraging().load_state_dict(avg.state_dict())
    with pytest.raises(ValueError, match="not averaging: none"):
        avg.load_state_dict(SwitchAveraging(patience=1, latest_step=10).state_dict())


def test_a_run_reports_raw_weights_and_keeps_the_best_of_them(tmp_path):
    result = train(tiny(tmp_path, averaging="none", max_steps=30, eval_every=10, optimizer="adam"))
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["avg_length"] for r in rows] == [1, 1, 1]
    assert all(r["val_loss"] == r["raw_val_loss"] for r in rows)
    best = min(rows, key=lambda r: r["val_loss"])
    assert (result.best_step, result.best_val_loss) == (best["step"], best["val_loss"])
    ckpt = read_checkpoint(Path(result.run_dir) / "best.pt")
    assert ckpt["position"]["step"] == best["step"] and ckpt["averaging"] == {"kind": "none"}
    assert load_checkpoint(Path(result.run_dir) / "best.pt")[1].averaging == "none"
