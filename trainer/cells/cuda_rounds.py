"""The Mogrifier rounds of one time step as one Triton kernel launch, forward and backward (CUDA).

The graphed CUDA path (cuda_graphs.py) replays a window's kernels from a CUDA graph, but the rounds
still launch two products and a gate per round and step, forward and backward: at PTB size the
Mogrifier LSTM trained at 0.31x cuDNN's LSTM on an H200, bound by those small launches
(docs/gpu.md). `FusedRounds` runs every round of a step in one launch (cuda_rounds_kernels.py)
and hands each product's input and dL/dz to the window's DeferredMatmuls, so that the weight
gradients stay one GEMM per window. It is `mogrifier_kernel: fused` (trainer/config.py); the
kernel's equations are the eager path's, Mogrifier paper §2 eqs. (1)-(2).

On CPU the kernel runs only in Triton's interpreter (TRITON_INTERPRET=1, set before Triton is
imported): that is how the tests check it against the eager cells on a machine without a GPU.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Literal

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from .deferred import DeferredMatmul

Precision = Literal["ieee", "tf32", "bf16"]
# Rows of the batch per program (tl.dot needs at least 16), the reduction chunk and the output chunk.
BLOCK_B, BLOCK_K, BLOCK_O = 16, 32, 64


def dot_precision(autocast_dtype: torch.dtype | None, allow_tf32: bool) -> Precision:
    """The kernel's product precision for a run's `precision` setting (trainer/device.py).

    bfloat16 autocast (precision bf16) rounds the operands to bfloat16; float32 matmuls allowed on
    TF32 (precision tf32) use it; otherwise full float32, never TF32 unasked.
    """
    if autocast_dtype == torch.bfloat16:
        return "bf16"
    return "tf32" if allow_tf32 else "ieee"


def current_precision(device: torch.device) -> Precision:
    """`dot_precision` for the autocast state and TF32 setting in force on `device` now."""
    enabled = torch.is_autocast_enabled(device.type)
    dtype = torch.get_autocast_dtype(device.type) if enabled else None
    return dot_precision(dtype, torch.backends.cuda.matmul.allow_tf32)


def gate_widths(round_index: int, m: int, n: int) -> tuple[int, int]:
    """(in, out) of round i's gate: Q^i maps h to x's size for odd i, R^i maps x to h's for even i."""
    return (n, m) if round_index % 2 else (m, n)


def layout(ranks: Sequence[int], m: int, n: int) -> list[tuple[int, int, int, int]]:
    """Per round (first factor, second factor, bias, rank) offsets in the packed weights.

    The rounds' tensors are packed in MogrifierGate.tensors() order: (w_in [in, k], w_out [k, out],
    bias) for rank k > 0, (weight [in, out], bias) for full rank (rank recorded as 0).
    """
    rows, offset = [], 0
    for i, rank in enumerate(ranks, start=1):
        width_in, width_out = gate_widths(i, m, n)
        if rank > 0:
            first, second = offset, offset + width_in * rank
            offset = second + rank * width_out
        else:
            first = second = offset
            offset += width_in * width_out
        rows.append((first, second, offset, max(rank, 0)))
        offset += width_out
    return rows


@functools.cache
def _meta(ranks: tuple[int, ...], m: int, n: int, device: torch.device) -> Tensor:
    """`layout` as an int32 tensor on `device`, made once per shape: a CUDA graph capture cannot copy
    from the host, and the graphed path's warm-up runs (uncaptured) fill this cache first."""
    return torch.tensor(layout(ranks, m, n), dtype=torch.int32, device=device)


@functools.cache
def kernels() -> ModuleType:
    """The Triton kernels, imported on first use: a trainer without Triton loses only this path."""
    try:
        from . import cuda_rounds_kernels
    except ImportError as err:
        raise RuntimeError(
            f"mogrifier_kernel: fused needs Triton ({err}); install PyTorch's CUDA build, which brings "
            "it, or set mogrifier_kernel: torch"
        ) from err
    return cuda_rounds_kernels


class FusedRounds:
    """A window's Mogrifier rounds through the kernels: the drop-in for windows' per-op rounds.

    `products` are the window's DeferredMatmuls, one or two per round exactly as the per-op rounds
    build them; the kernel computes their products itself, adds each `base(t)` term's gradient and
    `record`s each input, so the weight gradients are the same one GEMM per window.
    """

    def __init__(
        self, ranks: tuple[int, ...], params: Sequence[Tensor], m: int, n: int, device: torch.device
    ):
        self.ranks, self.m, self.n = ranks, m, n
        self.width = max(m, n)
        self.kmax = max(1, *ranks)
        self.weights = torch.cat([p.detach().reshape(-1).float() for p in params])
        self.meta = _meta(ranks, m, n, device)
        self.precision = current_precision(device)

    def step(
        self, products: Sequence[Sequence[DeferredMatmul]], t: int, x: Tensor, h: Tensor
    ) -> tuple[Tensor, Tensor]:
        """x↑, h↑ of step t from x_t and ĥ_{t-1} (Mogrifier paper §2 eqs. (1)-(2))."""
        bases = [product.base(t) for pair in products for product in pair]
        saved: list[tuple[Tensor, Tensor]] = []
        x_up, h_up = _RoundsStep.apply(x, h, self, saved, *bases)
        vals, low = saved[0]
        for i, pair in enumerate(products, start=1):
            pair[0].record(vals[i, :, : gate_widths(i, self.m, self.n)[0]])  # u = V[i-1]
            if len(pair) == 2:
                pair[1].record(low[i - 1, :, : self.ranks[i - 1]])  # p = u W_in
        return x_up, h_up

    def forward(self, x: Tensor, h: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(vals [R+2, B, W], σ(z) [R, B, W], low [R, B, KMAX]) for x_t [B, m], ĥ [B, n]."""
        batch, rounds = x.shape[0], len(self.ranks)
        vals = x.new_empty(rounds + 2, batch, self.width, dtype=torch.float32)
        sig = x.new_empty(rounds, batch, self.width, dtype=torch.float32)
        low = x.new_empty(rounds, batch, self.kmax, dtype=torch.float32)
        grid = (-(-batch // BLOCK_B),)
        kernels().rounds_forward[grid](
            x.float().contiguous(), h.float().contiguous(), self.weights, self.meta, vals, sig, low,
            batch, self.m, self.n, self.width, self.kmax, rounds,
            PRECISION=self.precision, BLOCK_B=BLOCK_B, BLOCK_K=BLOCK_K, BLOCK_O=BLOCK_O,
        )  # fmt: skip
        return vals, sig, low

    def backward(
        self, d_x_up: Tensor, d_h_up: Tensor, vals: Tensor, sig: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """(dL/dV [R+2, B, W], dL/dz [R, B, W], dL/dp [R, B, KMAX]) from the gradients of x↑ and h↑."""
        rounds, batch = sig.shape[0], sig.shape[1]
        dvals = torch.empty_like(vals)
        dz = torch.empty_like(sig)
        d_low = sig.new_empty(rounds, batch, self.kmax)
        grid = (-(-batch // BLOCK_B),)
        kernels().rounds_backward[grid](
            d_x_up.float().contiguous(), d_h_up.float().contiguous(), self.weights, self.meta, vals, sig,
            dvals, dz, d_low, batch, self.m, self.n, self.width, self.kmax, rounds,
            PRECISION=self.precision, BLOCK_B=BLOCK_B, BLOCK_K=BLOCK_K, BLOCK_O=BLOCK_O,
        )  # fmt: skip
        return dvals, dz, d_low


class _RoundsStep(torch.autograd.Function):
    """x↑, h↑ from x_t, ĥ through the forward kernel; the backward kernel for their gradients.

    The products' `bases` (bias terms and zeros, one per DeferredMatmul) are inputs only so that
    dL/dz and dL/dp reach them: their values are in the packed weights already.
    """

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, h: Tensor, rounds: FusedRounds, saved: list, *bases: Tensor
    ) -> tuple[Tensor, Tensor]:
        vals, sig, low = rounds.forward(x, h)
        ctx.rounds, ctx.dtypes = rounds, (x.dtype, h.dtype, *(b.dtype for b in bases))
        ctx.save_for_backward(vals, sig)
        saved.append((vals, low))
        last_x = len(rounds.ranks) - 1 + len(rounds.ranks) % 2  # x↑ = V[last_x], h↑ = the other one
        last_h = 2 * len(rounds.ranks) - 1 - last_x
        return vals[last_x + 1, :, : rounds.m], vals[last_h + 1, :, : rounds.n]

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, d_x_up: Tensor | None, d_h_up: Tensor | None) -> tuple[Tensor | None, ...]:
        rounds: FusedRounds = ctx.rounds
        vals, sig = ctx.saved_tensors
        batch = vals.shape[1]
        d_x_up = vals.new_zeros(batch, rounds.m) if d_x_up is None else d_x_up
        d_h_up = vals.new_zeros(batch, rounds.n) if d_h_up is None else d_h_up
        dvals, dz, d_low = rounds.backward(d_x_up, d_h_up, vals, sig)
        grads: list[Tensor] = []
        for i, rank in enumerate(rounds.ranks, start=1):
            if rank > 0:
                grads.append(d_low[i - 1, :, :rank])
            grads.append(dz[i - 1, :, : gate_widths(i, rounds.m, rounds.n)[1]])
        grads = [dvals[0, :, : rounds.m], dvals[1, :, : rounds.n], *grads]
        cast = [g.to(dtype) for g, dtype in zip(grads, ctx.dtypes, strict=True)]
        return (cast[0], cast[1], None, None, *cast[2:])
