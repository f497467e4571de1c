"""The Ray Tune trainable: one trial = one `trainer.train` run, its evaluations forwarded to Tune.

Every evaluation is sent with `tune.report`; the driver (the searcher) writes it to the study, so
trial workers never need the database or its credentials. A trainer exception (bad config, missing
data, divergence past its restores) does not raise out of the trial: it becomes a final result with
`error` (and `diverged_at`, the step, for a divergence), which the searcher stores as FAIL with that
message, or under `procedure: paper` a divergence as COMPLETE at its best value (lifecycle.decide).
Only a dead worker reaches Ray Tune's retry machinery, the one case where a retry can help.

Placement (placement.py): the device `auto` means, or a FAIL with the cause when the trial reserved
a GPU it cannot use. Every result carries the assigned ids (`gpu_ids`), the device used and the
training path taken on it (`cuda_path_used`), which the searcher stores as user attrs.
"""

from __future__ import annotations

import math
import numbers
import time
from typing import Any

from tuner.objectives.goals import Constraint, Goals
from tuner.sweeps.trial.lifecycle import FINAL
from tuner.sweeps.trial.placement import GPUUnusable, failed_placement, placement


def _numeric(metrics: dict[str, Any]) -> dict[str, Any]:
    keep = {}
    for key, value in metrics.items():
        flat_counts = isinstance(value, dict) and all(isinstance(v, numbers.Number) for v in value.values())
        if isinstance(value, (bool, numbers.Number, str)) or value is None or flat_counts:
            keep[key] = value  # a dict of numbers (cuda_path_calls) reaches the driver as "key/name" entries
    return keep


def _infeasible(settings: dict[str, Any], bounds: list[str]) -> dict[str, Any] | None:
    """The result of a trial whose config breaks a bound known before training (its model's
    size against `num_params<=...`): FAIL with the reason, without training a step. None when it
    keeps them (or the config is bad: training then says why)."""
    from trainer import make_config, model_size

    try:
        size = model_size(make_config(settings))
    except Exception:  # a bad config or missing data: the trainer reports it, as for any trial
        return None
    broken = Goals(constraints=tuple(Constraint.parse(b) for b in bounds)).violated_before_training(
        {"num_params": size}
    )
    if not broken:
        return None
    return {"num_params": size, "error": f"Infeasible: {'; '.join(broken)}; not trained"}


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """Train the trial described by `config["trainer"]`; return the final summary result. (A study
    of a trained model runs `tuner.sweeps.dyneval.trial.run_dyneval_trial` instead: the driver
    picks the trial kind once, `drive.execute.trial_kind`.)"""
    from ray import tune

    from trainer import TrainingDiverged, make_config, train

    settings = dict(config["trainer"])
    try:
        where = placement(str(settings.get("device", "auto")))
    except GPUUnusable as err:
        return failed_placement(err)
    settings["device"] = where["device"]
    last: dict[str, Any] = {"step": 0, "val_loss": math.inf, **where}
    if config.get("bounds") and (infeasible := _infeasible(settings, config["bounds"])) is not None:
        return {**last, **infeasible, FINAL: True}

    started = time.monotonic()

    def report(metrics: dict[str, Any]) -> None:
        timed = {**_numeric(metrics), "wall_time": round(time.monotonic() - started, 3)}
        last.update(timed)
        tune.report({**timed, **where})

    try:
        result = train(make_config(settings), report=report)
    except Exception as err:  # every trainer failure is the trial's FAIL reason, not a worker crash
        diverged = {"diverged_at": err.step} if isinstance(err, TrainingDiverged) else {}
        return {**last, FINAL: True, "error": f"{type(err).__name__}: {err}", **diverged}
    return {
        **last,
        FINAL: True,
        "best_val_loss": result.best_val_loss,
        "best_step": result.best_step,
        "best_checkpoint": result.best_checkpoint,
        "test_loss": result.test_loss,
        "run_dir": result.run_dir,
        "stopped": result.stopped,
        "dyneval_val_loss": result.dyneval_val_loss,
        "dyneval_test_loss": result.dyneval_test_loss,
        "mc_test_loss": result.mc_test_loss,
        "mc_temperature": result.mc_temperature,
        "mc_dropout_scale": result.mc_dropout_scale,
        "cuda_path_used": result.cuda_path_used,
    }
