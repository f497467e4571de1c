"""What trackers log from a result and a finished trial: plain dicts, no Ray."""

from __future__ import annotations

import math

from tuner.sweeps.trackers.records import Ending, Point, ending, hparams, point


def test_an_evaluation_gives_its_four_scalars_at_its_step():
    result = {
        "step": 20,
        "val_loss": 4.5,
        "train_loss": 4.7,
        "tokens_per_s": 1200.0,
        "lr": 0.002,
        "epoch": 0.3,
        "node_ip": "10.0.0.1",
        "best_checkpoint": "/s/trial-0/best.pt",
    }
    assert point(result) == Point(
        20, {"val_loss": 4.5, "train_loss": 4.7, "tokens_per_s": 1200.0, "lr": 0.002}
    )


def test_non_finite_and_missing_values_are_left_out():
    assert point({"step": 10, "val_loss": 4.0, "train_loss": math.nan, "lr": True}) == Point(
        10, {"val_loss": 4.0}
    )
    assert point({"step": 10, "val_loss": math.inf}) is None


def test_the_final_summary_and_a_result_without_step_log_nothing():
    assert point({"final": True, "step": 30, "val_loss": 4.1, "train_loss": 4.2}) is None
    assert point({"val_loss": 4.1}) is None


def test_hparams_keep_scalars_and_drop_inactive_ones():
    params = {"learning_rate": 0.002, "layers": 2, "cell": "lstm", "tied": True, "mogrify_rounds": None}
    assert hparams(params) == {"learning_rate": 0.002, "layers": 2, "cell": "lstm", "tied": True}


def test_an_ending_carries_the_told_value_checkpoint_and_error():
    attrs = {"checkpoint": "/s/trial-3/best.pt", "run_dir": "/s/trial-3"}
    assert ending("COMPLETE", 4.25, attrs) == Ending("COMPLETE", 4.25, "/s/trial-3/best.pt", None)
    assert ending("PRUNED", None, {}) == Ending("PRUNED")
    assert ending("FAIL", None, {"error": "ValueError: bad"}) == Ending("FAIL", error="ValueError: bad")
