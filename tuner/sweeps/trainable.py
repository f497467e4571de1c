"""The Ray Tune trainable: one trial = one `trainer.train` run, its evaluations forwarded to Tune.

Every evaluation is sent with `tune.report`; the driver (the searcher) writes it to the study, so
trial workers never need the database or its credentials. A trainer exception (bad config, missing
data, divergence past its restores) does not raise out of the trial: it becomes a final result with
`error`, which the searcher stores as FAIL with that message. Only a dead worker reaches Ray Tune's
retry machinery, the one case where a retry can help.

Placement: `device: auto` (the trainer's default) means the GPU Ray assigned this trial. Ray sets
CUDA_VISIBLE_DEVICES to the trial's GPUs, so the first one visible is `cuda:0`; a trial that
reserved no GPU trains on the CPU even on a GPU machine, so it never takes a GPU another trial
reserved, and one that reserved a GPU its PyTorch cannot use fails with the cause (GPUUnusable)
instead of training on the CPU. Every result carries the assigned ids (`gpu_ids`), the device used
and the training path taken on it (`cuda_path_used`), which the searcher stores as user attrs.
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


class GPUUnusable(RuntimeError):
    """The trial reserved GPUs but this process cannot use CUDA: failing beats training on the CPU
    while holding GPUs other trials could use."""


def assigned_device(requested: str, gpu_ids: list[str], cuda_problem: str | None) -> str:
    """The device a trial trains on: `requested` unless it is `auto`, which means the first GPU
    Ray assigned (`cuda:0` under Ray's CUDA_VISIBLE_DEVICES), or the CPU when Ray assigned none.
    A trial that reserved a GPU but whose PyTorch cannot use CUDA (`cuda_problem` says why) raises
    GPUUnusable instead of training on the CPU in silence."""
    if requested != "auto":
        return requested
    if not gpu_ids:
        return "cpu"
    if cuda_problem is not None:
        raise GPUUnusable(
            f"this trial reserved GPU {', '.join(gpu_ids)} but cannot use CUDA: {cuda_problem}. "
            "Set device: cpu (--set device=cpu) to train on the CPU on purpose, or gpus_per_trial 0"
        )
    return "cuda:0"


def placement(requested: str) -> dict[str, Any]:
    """`gpu_ids` (as Ray numbers them on the trial's node) and the `device` this trial trains on;
    GPUUnusable when it reserved a GPU it cannot use."""
    import ray

    from trainer.device import cuda_problem

    gpu_ids = [str(i) for i in ray.get_gpu_ids()]
    problem = cuda_problem() if gpu_ids and requested == "auto" else None
    return {"gpu_ids": gpu_ids, "device": assigned_device(requested, gpu_ids, problem)}


def failed_placement(err: GPUUnusable) -> dict[str, Any]:
    """The final result of a trial whose placement failed: FAIL with the reason, no retry."""
    return {"step": 0, "val_loss": math.inf, FINAL: True, "error": f"{type(err).__name__}: {err}"}


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """Train the trial described by `config["trainer"]`; return the final summary result. A study
    of a trained model (`config["checkpoint"]`) evaluates it instead (`tuner.sweeps.dyneval_trial`)."""
    if config.get("checkpoint"):
        from tuner.sweeps.dyneval_trial import run_dyneval_trial

        return run_dyneval_trial(config)
    from ray import tune

    from trainer import make_config, train

    settings = dict(config["trainer"])
    try:
        where = placement(str(settings.get("device", "auto")))
    except GPUUnusable as err:
        return failed_placement(err)
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
        "cuda_path_used": result.cuda_path_used,
    }
