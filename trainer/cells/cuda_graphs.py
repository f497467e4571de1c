"""The fast CUDA path: a layer's BPTT window, forward and backward, replayed as two CUDA graphs.

On CUDA a window of the eager cells is launch-bound: dozens of small kernels per time step. Here
the window's mathematics (cuda_windows.py, pointwise steps fused by torch.compile) is captured once per
layer, input shapes, dtypes and autocast state as a forward graph and a backward graph over static
buffers; each later call copies its inputs into those buffers and replays the graph, one launch
for the whole window. torch.compile's compilation is paid once per process for every shape
(windows.compiled_steps), a capture once per layer and key; measured on an H200 at PTB size, the
LSTM trains at 0.92x cuDNN's speed this way and at 0.16x eagerly (docs/gpu.md).

Hand-written rather than torch.cuda.make_graphed_callables, which returns its static output
buffers (the next replay would overwrite a caller's outputs) and cannot tell when a second forward
comes before the first one's backward (the saved activations would be overwritten): here outputs
are copies, and such a second call runs the same window eagerly instead.

Which calls come here is decided by paths.choose (route.py asks it once per call): training on
CUDA replays the graphs (`graphs`); evaluation under no_grad, and a second window before the first
one's backward, run the window with the compiled steps, one fused kernel per step, without capture
(`compiled`: an evaluation key would change with every batch shape at the end of a split).
With cuda_path "auto", any exception from compilation, capture or replay turns the fast path off
for the rest of the process with one warning (fallback.py) and the call runs the cell's own
forward (`eager`); with "graphs" it is an error naming the cause.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from . import fallback
from .base import State
from .cuda_windows import Config, Steps, compiled_steps
from .paths import StepPath

# Eager runs on a side stream before capture: torch.compile compiles, cuBLAS picks its kernels and
# workspaces, and the allocator warms up, so that none of that happens inside the capture.
WARMUP_RUNS = 3
Window = Callable[..., tuple[Tensor, Tensor, Tensor]]
Args = Sequence[Tensor | None]


def window_call(
    cell: nn.Module, steps: Steps, x: Tensor, state: State, mask: Tensor | None
) -> tuple[Tensor, State]:
    """The cell's window through cuda_windows.py without capture: the graphed path's math on any device."""
    window, config, params = cell.fast_window()  # type: ignore[operator]
    h_seq, h, c = window(steps, config, x, *state, mask, *params)
    return h_seq, (h, c)


def _autocast() -> tuple[bool, torch.dtype]:
    return torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")


class _Token:
    """Alive while a replayed forward still awaits its backward (held by the autograd node)."""


# Hand-written, not make_graphed_callables: outputs must be copies, and a pending backward must be seen.
class Capture:
    """A window's forward and backward CUDA graphs over static input, output and gradient buffers.

    Autocast is re-entered with cache_enabled=False around warm-up and capture: autocast's cache of
    cast weights would otherwise hand the graph a copy made outside it, never refreshed.
    """

    def __init__(self, fn: Window, args: Args) -> None:
        self.static_in = _leaves(args)
        self.diff = [k for k, a in enumerate(self.static_in) if a is not None and a.requires_grad]
        diff_in = [a for a in self.static_in if a is not None and a.requires_grad]
        enabled, dtype = _autocast()
        amp = functools.partial(torch.autocast, "cuda", dtype=dtype, enabled=enabled, cache_enabled=False)
        device = next(a for a in self.static_in if a is not None).device
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        # The warm-up differentiates leaves of its own: a leaf's gradient node keeps the stream it was
        # first used on, and one left on the warm-up stream is a stale stream to the backward capture
        # (a warning in torch 2.11; torch 2.13 documents it as failing the capture).
        warm = _leaves(self.static_in)
        diff_warm = [a for a in warm if a is not None and a.requires_grad]
        with torch.cuda.stream(side):
            for _ in range(WARMUP_RUNS):
                with amp():
                    outs = fn(*warm)
                torch.autograd.grad(outs, diff_warm, [torch.ones_like(o) for o in outs], allow_unused=True)
        torch.cuda.current_stream(device).wait_stream(side)
        del warm, diff_warm, outs
        pool = torch.cuda.graph_pool_handle()  # this capture's own pool: graphs replay in any order
        self.forward_graph, self.backward_graph = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.forward_graph, pool=pool), amp():
            self.static_out = fn(*self.static_in)
        self.static_grad_out = [torch.empty_like(o) for o in self.static_out]
        with torch.cuda.graph(self.backward_graph, pool=pool):
            grads = torch.autograd.grad(self.static_out, diff_in, self.static_grad_out, allow_unused=True)
        self.static_grad_in = list(grads)
        self._held: weakref.ref[_Token] | None = None

    @property
    def busy(self) -> bool:
        """A replayed forward is still waiting for its backward."""
        return self._held is not None and self._held() is not None

    def forward(self, args: Args) -> tuple[_Token, list[Tensor]]:
        for buffer, a in zip(self.static_in, args):
            if buffer is not None and a is not None:
                buffer.copy_(a)
        self.forward_graph.replay()
        token = _Token()
        self._held = weakref.ref(token)
        return token, [o.clone() for o in self.static_out]

    def backward(self, grads: Sequence[Tensor | None]) -> list[Tensor | None]:
        for buffer, g in zip(self.static_grad_out, grads):
            if g is None:
                buffer.zero_()
            else:
                buffer.copy_(g)
        self.backward_graph.replay()
        self._held = None
        out: list[Tensor | None] = [None] * len(self.static_in)
        for k, g in zip(self.diff, self.static_grad_in):
            out[k] = g
        return out


class _Replay(torch.autograd.Function):
    """Replays a Capture: inputs are copied in, outputs copied out; backward replays its graph."""

    @staticmethod
    def forward(ctx: Any, capture: Capture, *args: Tensor | None) -> tuple[Tensor, ...]:
        ctx.capture = capture
        ctx.token, outs = capture.forward(args)
        return tuple(outs)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        return (None, *ctx.capture.backward(grads))


# Per cell (weakly: captures die with their model), per key: the layer's own graphs and buffers.
_CAPTURES: weakref.WeakKeyDictionary[nn.Module, dict[tuple[Any, ...], Any]] = weakref.WeakKeyDictionary()


def _key(window: Window, config: Config, args: Args) -> tuple[Any, ...]:
    shapes = tuple(None if a is None else (tuple(a.shape), a.dtype, a.device, a.requires_grad) for a in args)
    return (window, config, _autocast(), shapes)


def capture_facts(cell: nn.Module, x: Tensor, state: State, mask: Tensor | None) -> tuple[bool, int, bool]:
    """(a capture exists for this training call's key, captures the layer holds, that capture is busy):
    what paths.choose needs to know of this layer's captures."""
    captures = _CAPTURES.get(cell, {})
    capture = captures.get(_training_key(cell, x, state, mask))
    busy = capture is not None and capture is not _PROBED and capture.busy
    return capture is not None, len(captures), busy


def run(
    cell: nn.Module, path: StepPath, x: Tensor, state: State, mask: Tensor | None, own: Callable[..., Any]
) -> tuple[tuple[Tensor, State], StepPath]:
    """The cell's window on `path` (compiled or graphs) and the path that ran: on a failure, the
    fallback the module docstring describes, whose call runs `own` (the cell's own forward)."""
    try:
        return _fast(cell, path, x, state, mask), path
    except Exception as err:  # any failure of compile, capture or replay, FailOnRecompileLimitHit included
        if getattr(cell, "cuda_path", "auto") == "graphs":
            raise RuntimeError(
                f"the fast path of {type(cell).__name__} failed ({type(err).__name__}: {err}); "
                "set cuda_path: auto to fall back to eager, or eager to train without it"
            ) from err
        fallback.fall_back(err)
        return own(x, state, mask), StepPath.EAGER


def _training_args(
    cell: nn.Module, x: Tensor, state: State, mask: Tensor | None
) -> tuple[Tensor | None, ...]:
    """The window's arguments for a training call. A window's first state (zeros, or carried and
    detached) needs no gradient, later steps' do: as leaves that ask for one, every call compiles
    and captures one variant, not two."""
    _, _, params = cell.fast_window()  # type: ignore[operator]
    state = tuple(s if s.requires_grad else s.detach().requires_grad_() for s in state)
    return (x, *state, mask, *params)


def _training_key(cell: nn.Module, x: Tensor, state: State, mask: Tensor | None) -> tuple[Any, ...]:
    window, config, _ = cell.fast_window()  # type: ignore[operator]
    return _key(window, config, _training_args(cell, x, state, mask))


def _fast(
    cell: nn.Module, path: StepPath, x: Tensor, state: State, mask: Tensor | None
) -> tuple[Tensor, State]:
    """`compiled`: the window with the compiled steps (on CPU, a training key's first call runs them
    forward and backward on copies first, so that compilation fails here); `graphs`: captured on the
    key's first call, replayed after."""
    window, config, params = cell.fast_window()  # type: ignore[operator]
    fn = functools.partial(window, compiled_steps(), config)
    training = torch.is_grad_enabled() and any(
        a is not None and a.requires_grad for a in (x, *state, mask, *params)
    )
    if not training:  # evaluation, or nothing to differentiate: the compiled steps alone
        h_seq, h, c = fn(x, *state, mask, *params)
        return h_seq, (h, c)
    args = _training_args(cell, x, state, mask)
    captures = _CAPTURES.setdefault(cell, {})
    key = _key(window, config, args)
    if path is StepPath.GRAPHS:
        capture = captures.get(key)
        if capture is None:
            capture = captures[key] = Capture(fn, args)
        h_seq, h, c = _Replay.apply(capture, *args)
        return h_seq, (h, c)
    if not x.is_cuda and key not in captures:
        captures[key] = _probe(fn, args)
    h_seq, h, c = fn(*args)
    return h_seq, (h, c)


_PROBED: Any = object()  # a key whose compiled forward and backward ran once on CPU


def _leaves(args: Args) -> list[Tensor | None]:
    """Detached copies of `args`, each asking for a gradient where its original does."""
    return [None if a is None else a.detach().clone().requires_grad_(a.requires_grad) for a in args]


def _probe(fn: Window, args: Args) -> Any:
    """Run `fn` forward and backward on detached copies of `args`: what Capture's warm-up does on
    CUDA, so that a compilation error surfaces inside `run`'s fallback and not in a later backward."""
    copies = _leaves(args)
    outs = fn(*copies)
    diff = [a for a in copies if a is not None and a.requires_grad]
    torch.autograd.grad(outs, diff, [torch.ones_like(o) for o in outs], allow_unused=True)
    return _PROBED
