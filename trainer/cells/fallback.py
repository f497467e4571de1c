"""Whether this process still trusts the fast path.

A Ray worker lives through many trials of different shapes. A failure of the fast path
(compilation, CUDA graph capture: any `Exception`, not only `RuntimeError`) must not fail that
trial or the ones after it: with `cuda_path: auto` the first failure warns once and turns the fast
path off for the rest of the process, and every later training call runs the cell's eager forward.
What each training call actually ran is counted in paths.py.

RNNTUNE_FAST_PATH_ON_CPU=1 (tests only) sends CPU training through the compiled steps too, without
CUDA graphs, so that compilation, the fallback and the per-process compile count are exercised on
a machine without a GPU.
"""

from __future__ import annotations

import os
import threading
import warnings

from . import paths

FORCE_ON_CPU_ENV = "RNNTUNE_FAST_PATH_ON_CPU"


class FastPathWarning(RuntimeWarning):
    """The fast path failed in this process; training goes on eagerly."""


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.broken: str | None = None  # why the fast path is off in this process, None while trusted


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
    if first:
        warnings.warn(
            f"the fast training path failed ({_STATE.broken}); this process trains eagerly from now on "
            "(same results, slower on CUDA). Set cuda_path: eager to skip the attempt, or graphs to "
            "make such a failure an error.",
            FastPathWarning,
            stacklevel=3,
        )


def reset() -> None:
    """Trust the fast path again (tests, or a process that changed what broke it)."""
    with _STATE.lock:
        _STATE.broken = None
    paths.begin_run()
