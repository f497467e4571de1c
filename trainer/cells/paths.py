"""Which path an LSTM-family cell's call takes, decided by one pure function, and a count of what ran.

The paths, slowest to fastest on CUDA:
- `cpu`: the cell's own forward on a CPU tensor (cpu_fused.py's Function with its hand-written
  backward for the LSTM and Mogrifier LSTM, per-step autograd for the RLSTMs);
- `eager`: the cell's own forward on CUDA (cuda_path eager, after a failure of the fast path,
  inside a caller's CUDA graph capture, or for a layer that already holds MAX_CAPTURES graphs);
- `compiled`: the window of cuda_windows.py with its torch.compile'd steps, not captured (evaluation,
  a second window before the first one's backward, and the test-only switch on CPU);
- `graphs`: that window replayed as CUDA graphs (cuda_graphs.py).
With `mogrifier_kernel: fused`, the `compiled` and `graphs` windows of a cell with Mogrifier rounds
run each step's rounds in one Triton kernel (cuda_rounds.py); the count records those calls as
`graphs+fused_rounds` and `compiled+fused_rounds`.

`choose` takes every fact the decision depends on as a plain value (tests check it with plain
values); route.py gathers the facts, asks once per call, and runs the answer. The trainer reads
`counts()` and `path_used()` back after a run, so each trial records how many training calls took
each path, and the slowest one that ran, instead of leaving the user to guess.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, cast

CudaPath = Literal["auto", "graphs", "eager"]
CUDA_PATHS: tuple[CudaPath, ...] = ("auto", "graphs", "eager")
# How the compiled and graphed windows run the Mogrifier rounds: torch ops (two products and a gate
# per round) or one Triton kernel per step (cuda_rounds.py).
MogrifierKernel = Literal["torch", "fused"]
MOGRIFIER_KERNELS: tuple[MogrifierKernel, ...] = ("torch", "fused")
# Captures kept per layer; a layer that meets more keys (shapes) than this runs those eagerly, so
# that memory held by graph pools stays bounded.
MAX_CAPTURES = 8
FUSED_ROUNDS = "+fused_rounds"  # the suffix of a count whose window ran the fused rounds


class StepPath(StrEnum):
    """A training path (module docstring); the value is what a trial records as `cuda_path_used`."""

    CPU = "cpu"
    EAGER = "eager"
    COMPILED = "compiled"
    GRAPHS = "graphs"


PathUsed = Literal["graphs", "compiled", "eager", "cpu"]  # StepPath's values, for typed attributes


@dataclass(frozen=True)
class Call:
    """What `choose` looks at for one call of a cell."""

    setting: CudaPath  # the cell's cuda_path
    on_cuda: bool  # the input is a CUDA tensor
    forced_on_cpu: bool  # the test-only switch RNNTUNE_FAST_PATH_ON_CPU=1 (fallback.py)
    broken: bool  # the fast path failed earlier in this process
    capturing: bool  # the call runs inside a caller's CUDA graph capture
    training: bool  # gradients are recorded and some input needs one
    captured: bool  # this layer already holds a capture for this call's shapes
    captures: int  # how many captures the layer holds
    busy: bool  # that capture's forward still awaits its backward


def choose(call: Call) -> StepPath:
    """The path one call of a cell takes (module docstring)."""
    if not call.on_cuda and not call.forced_on_cpu:  # the switch makes the CPU take CUDA's decisions
        return StepPath.CPU
    if call.setting == "eager" or (call.setting == "auto" and call.broken) or call.capturing:
        return StepPath.EAGER
    if not call.training or not call.on_cuda or call.busy:
        return StepPath.COMPILED
    if not call.captured and call.captures >= MAX_CAPTURES:
        return StepPath.EAGER
    return StepPath.GRAPHS


class _Record:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()


_RECORD = _Record()


def count_key(path: StepPath, fused_rounds: bool) -> str:
    """The name a call is counted under: the path, with FUSED_ROUNDS when the fused rounds ran."""
    return (
        f"{path.value}{FUSED_ROUNDS}"
        if fused_rounds and path in (StepPath.COMPILED, StepPath.GRAPHS)
        else path.value
    )


def note(path: StepPath, fused_rounds: bool = False) -> None:
    """Count one training call that took `path`."""
    with _RECORD.lock:
        _RECORD.counts[count_key(path, fused_rounds)] += 1


def begin_run() -> None:
    """Start counting the calls of a new training run (a trial)."""
    with _RECORD.lock:
        _RECORD.counts = Counter()


def counts() -> dict[str, int]:
    """Training calls per path since `begin_run`, by `count_key`."""
    with _RECORD.lock:
        return dict(sorted(_RECORD.counts.items()))


def path_used(on_cuda: bool, forced_on_cpu: bool = False) -> PathUsed:
    """What a trial records as `cuda_path_used`: `eager` as soon as any training call ran eagerly,
    else the first of `graphs`, `compiled`, `cpu` that ran (counts() has the details); with no call
    counted (a cell without a fast path), `eager` on CUDA or under the test switch, else `cpu`."""
    taken = {key.removesuffix(FUSED_ROUNDS) for key in counts()}
    for path in (StepPath.EAGER, StepPath.GRAPHS, StepPath.COMPILED, StepPath.CPU):
        if path.value in taken:
            return cast(PathUsed, path.value)
    return "eager" if on_cuda or forced_on_cpu else "cpu"
