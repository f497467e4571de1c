"""Where a run trains and in what precision: the device (with the reason when CUDA cannot be used)
and the numeric settings that `precision` stands for."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from .config import ConfigError, TrainConfig


def cuda_problem() -> str | None:
    """Why this process cannot train on CUDA, in words a user can act on; None when it can."""
    if torch.version.cuda is None:
        return (
            f"this PyTorch ({torch.__version__}) is a build without CUDA; "
            "install a CUDA build of torch on the GPU machines"
        )
    try:
        torch.cuda.init()  # raises with the driver's own words (too old, not loaded, ...)
    except Exception as err:  # the cause is reported, never swallowed
        return f"CUDA cannot start: {err}"
    if torch.cuda.device_count() == 0:
        return "CUDA sees no device (check CUDA_VISIBLE_DEVICES and the container's GPU access)"
    return None


def resolve_device(name: str) -> torch.device:
    """`auto` is the GPU when CUDA works and the CPU otherwise; `cuda[:N]` must work."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(
            f"device: {name!r} was asked for but CUDA is not available ({cuda_problem()}); use auto or cpu"
        )
    return torch.device(name)


def set_matmul_precision(cfg: TrainConfig, device: torch.device) -> None:
    """TF32 for float32 matmuls on CUDA when `precision` is tf32, full float32 otherwise. The
    setting is per process, so every run sets it (a Ray worker runs trials of either kind)."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = cfg.precision == "tf32"
        torch.backends.cudnn.allow_tf32 = cfg.precision == "tf32"


@contextlib.contextmanager
def autocast(cfg: TrainConfig, device: torch.device) -> Iterator[None]:
    """bfloat16 autocast around a forward pass when `precision` is bf16, nothing otherwise. The
    caller keeps the carried state and the loss in float32."""
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.precision == "bf16"):
        yield
