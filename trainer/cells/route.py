"""Every call of an LSTM-family cell comes here: the facts gathered, the path chosen once, run, counted.

The decision itself is paths.choose, a pure function of plain values; this module reads those
values off the cell, the process and cuda_graphs.py's captures, runs what was chosen (the cell's own
forward, or its window on the compiled or graphed path) and counts the training call under the
path that actually ran, the fallback after a failure included.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from . import cuda_graphs, fallback, paths
from .base import State
from .paths import Call, CudaPath, StepPath

OwnForward = Callable[[Tensor, State, Tensor | None], tuple[Tensor, State]]


def facts(cell: nn.Module, x: Tensor, state: State, mask: Tensor | None) -> Call:
    """What paths.choose needs to decide this call of `cell`."""
    setting: CudaPath = getattr(cell, "cuda_path", "eager")
    training = torch.is_grad_enabled() and (
        any(t.requires_grad for t in (x, *state)) or any(p.requires_grad for p in cell.parameters())
    )
    fast = (x.is_cuda or fallback.forced_on_cpu()) and setting != "eager"
    captured, captures, busy = (
        cuda_graphs.capture_facts(cell, x, state, mask) if fast and training else (False, 0, False)
    )
    return Call(
        setting=setting,
        on_cuda=x.is_cuda,
        forced_on_cpu=fallback.forced_on_cpu(),
        broken=fallback.broken() is not None,
        capturing=x.is_cuda and torch.cuda.is_current_stream_capturing(),
        training=training,
        captured=captured,
        captures=captures,
        busy=busy,
    )


def forward(
    cell: nn.Module, x: Tensor, state: State, mask: Tensor | None, own: OwnForward
) -> tuple[Tensor, State]:
    """Run one call of `cell` on the path paths.choose picks; `own` is the cell's own forward."""
    path = paths.choose(facts(cell, x, state, mask))
    if path in (StepPath.CPU, StepPath.EAGER):
        out = own(x, state, mask)
    else:
        out, path = cuda_graphs.run(cell, path, x, state, mask, own)
    if torch.is_grad_enabled():  # what a run trained on; evaluation calls are not counted
        paths.note(path, fused_rounds=getattr(cell, "fused_rounds", False))
    return out
