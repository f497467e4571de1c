"""The Ray Tune trainable: one trial = one `trainer.train` run, its evaluations forwarded to Tune.

Every evaluation is sent with `tune.report`; the driver (the searcher) writes it to the study, so
trial workers never need the database or its credentials. A trainer exception (bad config, missing
data, divergence past its restores) does not raise out of the trial: it becomes a final result with
`error`, which the searcher stores as FAIL with that message. Only a dead worker reaches Ray Tune's
retry machinery, the one case where a retry can help.

Placement: `device: auto` (the trainer's default) means the GPU Ray assigned this trial. Ray sets
CUDA_VISIBLE_DEVICES to the trial's GPUs, so the first one visible is `cuda:0`; a trial that
reserved no GPU trains on the CPU even on a GPU machine, so it never takes a GPU another trial
reserved. Every result carries the assigned ids (`gpu_ids`) and the device used, which the searcher
stores as the trial's user attrs.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

FINAL = "final"


def _numeric(metrics: dict[str, Any]) -> dict[str, Any]:
    keep = {}
    for key, value in metrics.items():
        if isinstance(value, (bool, numbers.Number, str)) or value is None:
            keep[key] = value
    return keep


def assigned_device(requested: str, gpu_ids: list[str], cuda_available: bool) -> str:
    """The device a trial trains on: `requested` unless it is `auto`, which means the first GPU
    Ray assigned (`cuda:0` under Ray's CUDA_VISIBLE_DEVICES), or the CPU when Ray assigned none or
    this PyTorch has no CUDA."""
    if requested != "auto":
        return requested
    return "cuda:0" if gpu_ids and cuda_available else "cpu"


def placement(requested: str) -> dict[str, Any]:
    """`gpu_ids` (as Ray numbers them on the trial's node) and the `device` this trial trains on."""
    import ray
    import torch

    gpu_ids = [str(i) for i in ray.get_gpu_ids()]
    return {"gpu_ids": gpu_ids, "device": assigned_device(requested, gpu_ids, torch.cuda.is_available())}


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """Train the trial described by `config["trainer"]`; return the final summary result. A study
    of a trained model (`config["checkpoint"]`) evaluates it instead (`tuner.sweeps.dyneval_trial`)."""
    if config.get("checkpoint"):
        from tuner.sweeps.dyneval_trial import run_dyneval_trial

        return run_dyneval_trial(config)
    from ray import tune

    from trainer import make_config, train

    settings = dict(config["trainer"])
    where = placement(str(settings.get("device", "auto")))
    settings["device"] = where["device"]
    last: dict[str, Any] = {"step": 0, "val_loss": math.inf, **where}

    def report(metrics: dict[str, Any]) -> None:
        last.update(_numeric(metrics))
        tune.report({**_numeric(metrics), **where})

    try:
        result = train(make_config(settings), report=report)
    except Exception as err:  # every trainer failure is the trial's FAIL reason, not a worker crash
        return {**last, FINAL: True, "error": f"{type(err).__name__}: {err}"}
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
    }
