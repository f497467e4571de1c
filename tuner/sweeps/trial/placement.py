"""Where a trial trains: the GPUs Ray assigned it and the device that means, or the reason it
cannot train there.

`device: auto` (the trainer's default) means the GPU Ray assigned this trial. Ray sets
CUDA_VISIBLE_DEVICES to the trial's GPUs, so the first one visible is `cuda:0`; a trial that
reserved no GPU trains on the CPU even on a GPU machine, so it never takes a GPU another trial
reserved, and one that reserved a GPU its PyTorch cannot use fails with the cause (GPUUnusable)
instead of training on the CPU.
"""

from __future__ import annotations

import math
from typing import Any

from tuner.sweeps.trial.lifecycle import FINAL


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
