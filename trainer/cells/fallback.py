"""Whether this process still trusts the fast path, and which path a training took on it.

A Ray worker lives through many trials of different shapes. A failure of the fast path
(compilation, CUDA graph capture: any `Exception`, not only `RuntimeError`) must not fail that
trial or the ones after it: with `cuda_path: auto` the first failure warns once and turns the fast
path off for the rest of the process, and every later training call runs the cell's eager forward.
What each training run actually used is read back by the trainer (`path_used`), so a trial records
`cuda_path_used` instead of leaving the user to guess.

RNNTUNE_FAST_PATH_ON_CPU=1 (tests only) sends CPU training through the compiled steps too, without
CUDA graphs, so that compilation, the fallback and the per-process compile count are exercised on
a machine without a GPU.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Literal

PathUsed = Literal["graphs", "compiled", "eager", "cpu"]
FORCE_ON_CPU_ENV = "RNNTUNE_FAST_PATH_ON_CPU"


class FastPathWarning(RuntimeWarning):
    """The fast path failed in this process; training goes on eagerly."""


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.broken: str | None = None  # why the fast path is off in this process, None while trusted
        self.used: set[str] = set()  # paths the training calls took since `begin_run`


_STATE = _State()


def forced_on_cpu() -> bool:
    """Whether CPU training takes the compiled steps (the test-only switch in the module docstring)."""
    return os.environ.get(FORCE_ON_CPU_ENV) == "1"


def broken() -> str | None:
    """Why the fast path was turned off in this process, or None while it is trusted."""
    return _STATE.broken


def fall_back(err: BaseException) -> None:
    """Turn the fast path off for the rest of the process, warning once with the cause."""
    with _STATE.lock:
        first = _STATE.broken is None
        if first:
            _STATE.broken = f"{type(err).__name__}: {err}".strip()[:2000]
        _STATE.used.add("eager")
    if first:
        warnings.warn(
            f"the fast training path failed ({_STATE.broken}); this process trains eagerly from now on "
            "(same results, slower on CUDA). Set cuda_path: eager to skip the attempt, or graphs to "
            "make such a failure an error.",
            FastPathWarning,
            stacklevel=3,
        )


def note(path: PathUsed) -> None:
    """Record that a training call took `path`."""
    _STATE.used.add(path)


def begin_run() -> None:
    """Start recording the paths of a new training run (a trial)."""
    with _STATE.lock:
        _STATE.used = set()


def path_used(on_cuda: bool) -> PathUsed:
    """The path this run trained on: `eager` as soon as any call fell back or ran eagerly on CUDA,
    else `graphs` or `compiled`; `cpu` for the CPU path (fused.py), which has no fast variant."""
    used = _STATE.used
    if "eager" in used:
        return "eager"
    if "graphs" in used:
        return "graphs"
    if "compiled" in used:
        return "compiled"
    return "eager" if on_cuda or forced_on_cpu() else "cpu"


def reset() -> None:
    """Trust the fast path again (tests, or a process that changed what broke it)."""
    with _STATE.lock:
        _STATE.broken = None
        _STATE.used = set()
