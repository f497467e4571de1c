"""The fast CUDA path's mathematics: one layer's BPTT window as plain autograd ops (cuda_graphs.py).

Hand-written, not cpu_fused.py's Function: that one fills buffers in place and has a hand-written
backward tuned for CPU; cuda_graphs.py needs the window as a pure function of its tensor inputs, so
that its forward and its autograd backward can be captured as CUDA graphs. The pointwise parts of
a step are separate functions, so that `compiled_steps()` can fuse each one into a single kernel
with torch.compile; `PLAIN` is the same functions uncompiled (what the CPU tests run).

The recurrent products go through DeferredMatmul (deferred.py): their weight gradients are one
GEMM over the window, not one per step. Equations: thesis §4.1 (capped LSTM, RLSTM), thesis §4.2
eq. 1 (state dropout ĥ = h ⊙ M^state), Mogrifier paper §2 eqs. (1)-(2) (the rounds).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from .cuda_rounds import FusedRounds
from .deferred import DeferredMatmul, zeros_base

Config = tuple[int, ...]  # one rank per Mogrifier round (k <= 0: full rank); () for no rounds


def lstm_step(g: Tensor, c_prev: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
    """(h, c, ĥ) of the capped LSTM from pre-activations g = [i, j, f, o] (thesis §4.1, §4.6).

    c = f ⊙ c_prev + min(i, 1 - f) ⊙ j, h = o ⊙ tanh(c); ĥ = h ⊙ M^state (thesis §4.2 eq. 1),
    None without a mask.
    """
    gi, gj, gf, go = g.chunk(4, dim=1)
    i, j, f, o = torch.sigmoid(gi), torch.tanh(gj), torch.sigmoid(gf), torch.sigmoid(go)
    c = f * c_prev + torch.minimum(i, 1.0 - f) * j
    h = o * torch.tanh(c)
    return h, c, (None if mask is None else h * mask)


def mogrifier_round(z: Tensor, v: Tensor) -> Tensor:
    """V[i] = 2σ(z_i) ⊙ V[i-2] (Mogrifier paper §2 eqs. (1)-(2))."""
    return 2.0 * torch.sigmoid(z) * v


def rlstm_input(gi: Tensor, gj: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(i, j, i ⊙ j) of the RLSTM (thesis §4.1).

    i = σ(W^ix x + W^ih h_prev + b^i), j = tanh(W^jx x + W^jh h_prev + b^j).
    """
    i, j = torch.sigmoid(gi), torch.tanh(gj)
    return i, j, i * j


def rlstm_cell(
    gf: Tensor, fu: Tensor, i: Tensor, j: Tensor, c_prev: Tensor, mask: Tensor | None
) -> tuple[Tensor, Tensor | None]:
    """(c, c ⊙ M^state) of the RLSTM (thesis §4.1, §4.2); None for the second without a mask.

    f = σ(W^fu (i ⊙ j) + W^fh h_prev + b^f) with fu = W^fu (i ⊙ j); c = f ⊙ c_prev + min(i, 1 - f) ⊙ j.
    """
    f = torch.sigmoid(gf + fu)
    c = f * c_prev + torch.minimum(i, 1.0 - f) * j
    return c, (None if mask is None else c * mask)


def rlstm_output(go: Tensor, c: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """(h, ĥ): o = σ(W^oc (c ⊙ M^state) + b^o), h = o ⊙ tanh(c) (thesis §4.1); ĥ = h ⊙ M^state."""
    h = torch.sigmoid(go) * torch.tanh(c)
    return h, (None if mask is None else h * mask)


@dataclass(frozen=True)
class Steps:
    """The pointwise step functions a window runs: plain, or each compiled into one kernel."""

    lstm: Callable[..., tuple[Tensor, Tensor, Tensor | None]]
    round: Callable[[Tensor, Tensor], Tensor]
    rlstm_input: Callable[[Tensor, Tensor], tuple[Tensor, Tensor, Tensor]]
    rlstm_cell: Callable[..., tuple[Tensor, Tensor | None]]
    rlstm_output: Callable[..., tuple[Tensor, Tensor | None]]


PLAIN = Steps(lstm_step, mogrifier_round, rlstm_input, rlstm_cell, rlstm_output)


@functools.cache
def compiled_steps() -> Steps:
    """PLAIN with every step torch.compile'd once per process, for every shape.

    dynamic=True: the batch and hidden sizes are symbols, so the trials a Ray worker runs one after
    another (each with its own hidden size, batch, Mogrifier setting) reuse one kernel per step and
    variant (with or without a state mask) instead of compiling per shape, which hit Dynamo's
    recompile limit at the 9th shape (FailOnRecompileLimitHit under fullgraph=True). Measured on
    CPU (docs/gpu.md): 12 shapes compile 3 graphs in all; Inductor's on-disk cache makes a new
    process's compilation seconds instead of tens of seconds.
    """
    fuse = functools.partial(torch.compile, fullgraph=True, dynamic=True)
    return Steps(*(fuse(fn) for fn in (lstm_step, mogrifier_round, rlstm_input, rlstm_cell, rlstm_output)))


class _Rounds:
    """The Mogrifier rounds' products Q^i u + b with weight gradients batched over the window."""

    def __init__(self, ranks: Config, params: tuple[Tensor, ...], x: Tensor, n: int, fused: bool) -> None:
        steps, batch, m = x.shape
        self.products: list[list[DeferredMatmul]] = []
        k = 0
        for rank in ranks:
            if rank > 0:  # low rank: z = (u W_in) W_out + b
                w_in, w_out, bias = params[k : k + 3]
                k += 3
                self.products.append(
                    [
                        DeferredMatmul(w_in, zeros_base(x, steps, batch, rank)),
                        DeferredMatmul(w_out, bias.expand(steps, batch, -1)),
                    ]
                )
            else:  # full rank: z = u W + b
                weight, bias = params[k : k + 2]
                k += 2
                self.products.append([DeferredMatmul(weight, bias.expand(steps, batch, -1))])
        # `mogrifier_kernel: fused`: every round of a step in one kernel launch (cuda_rounds.py).
        self.kernel = FusedRounds(ranks, params, m, n, x.device) if fused and ranks else None

    def mogrify(self, steps: Steps, t: int, x: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
        """x↑, h↑ (Mogrifier paper §2): x^i = 2σ(Q^i h^{i-1}) ⊙ x^{i-2} (odd i), h^i alike (even i)."""
        if self.kernel is not None:
            return self.kernel.step(self.products, t, x, h)
        for i, products in enumerate(self.products, start=1):
            z = x if i % 2 == 0 else h  # the gate of round i reads the other value
            for product in products:
                z = product(t, z)
            if i % 2:
                x = steps.round(z, x)
            else:
                h = steps.round(z, h)
        return x, h


# Hand-written, not cpu_fused.py's Function: a CUDA graph captures a pure function and its autograd backward.
def lstm_window(
    steps: Steps,
    ranks: Config,
    x: Tensor,
    h: Tensor,
    c: Tensor,
    mask: Tensor | None,
    *params: Tensor,
    fused_rounds: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    """(h_seq, h_T, c_T) of the (Mogrifier) capped LSTM over x [T, B, m] (thesis §4.1, Mogrifier §2).

    params: w_x [m, 4n], w_h [n, 4n], bias [4n], then each round's gate tensors (mogrifier.py).
    Without rounds W^x x + b is hoisted out of the loop; with them [x↑, h↑] @ [W^x; W^h] + b is
    one product per step, since x↑ depends on h_prev. `fused_rounds`: the rounds of each step in
    one Triton kernel launch (cuda_rounds.py) instead of two products and a gate per round.
    """
    w_x, w_h, bias, *gate_params = params
    t_len, batch, m = x.shape
    rounds = _Rounds(ranks, tuple(gate_params), x, w_h.shape[0], fused_rounds)
    if ranks:
        recurrent = DeferredMatmul(torch.cat([w_x, w_h]), bias.expand(t_len, batch, -1))
    else:
        gx = torch.addmm(bias, x.reshape(-1, m), w_x).view(t_len, batch, -1)
        recurrent = DeferredMatmul(w_h, gx)
    h_hat = h if mask is None else h * mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
    xs = x.unbind(0)  # one gradient node for the window; x[t] would add a [T, B, m] tensor per step
    outs = []
    for t in range(t_len):
        if ranks:
            x_up, h_up = rounds.mogrify(steps, t, xs[t], h_hat)
            g = recurrent(t, torch.cat([x_up, h_up], dim=1))
        else:
            g = recurrent(t, h_hat)
        h, c, hat = steps.lstm(g, c, mask)
        h_hat = h if hat is None else hat
        outs.append(h)
    return torch.stack(outs), h, c


def rlstm_window(
    steps: Steps,
    ranks: Config,
    x: Tensor,
    h: Tensor,
    c: Tensor,
    mask: Tensor | None,
    *params: Tensor,
    fused_rounds: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    """(h_seq, h_T, c_T) of the (Mogrifier) RLSTM over x [T, B, m] (thesis §4.1, §4.2 eq. 1).

    params: w_x [m, 2n], w_h [n, 3n], w_fu [n, n], w_oc [n, n], bias [4n] (rlstm.py), then each
    round's gate tensors. With rounds the step multiplies [x↑, h↑] by [[W^ix, W^jx, 0]; W^h]: the
    same [i, j, f] pre-activations as the RLSTM's, in one product. `fused_rounds` as in lstm_window.
    """
    w_x, w_h, w_fu, w_oc, bias, *gate_params = params
    t_len, batch, m = x.shape
    n = w_h.shape[0]
    b_ij, b_f, b_o = bias[: 2 * n], bias[2 * n : 3 * n], bias[3 * n :]
    rounds = _Rounds(ranks, tuple(gate_params), x, n, fused_rounds)
    if ranks:
        weight = torch.cat([torch.cat([w_x, w_x.new_zeros(m, n)], dim=1), w_h])
        recurrent = DeferredMatmul(weight, bias[: 3 * n].expand(t_len, batch, -1))
    else:
        gx = torch.addmm(b_ij, x.reshape(-1, m), w_x).view(t_len, batch, 2 * n)
        recurrent = DeferredMatmul(w_h, torch.cat([gx, b_f.expand(t_len, batch, n)], dim=2))
    from_u = DeferredMatmul(w_fu, zeros_base(x, t_len, batch, n))
    from_c = DeferredMatmul(w_oc, b_o.expand(t_len, batch, n))
    h_hat = h if mask is None else h * mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
    xs = x.unbind(0)  # one gradient node for the window; x[t] would add a [T, B, m] tensor per step
    outs = []
    for t in range(t_len):
        if ranks:
            x_up, h_up = rounds.mogrify(steps, t, xs[t], h_hat)  # mogrify(ĥ_prev, x) (thesis §4.2 eq. 1)
            g = recurrent(t, torch.cat([x_up, h_up], dim=1))
        else:
            g = recurrent(t, h_hat)
        gi, gj, gf = g.chunk(3, dim=1)
        i, j, ij = steps.rlstm_input(gi, gj)
        c, c_hat = steps.rlstm_cell(gf, from_u(t, ij), i, j, c, mask)
        h, hat = steps.rlstm_output(from_c(t, c if c_hat is None else c_hat), c, mask)
        h_hat = h if hat is None else hat
        outs.append(h)
    return torch.stack(outs), h, c


# The windows with every step's rounds in one kernel launch (`mogrifier_kernel: fused`): module-level
# objects, so that cuda_graphs.py's capture key (which holds the window) is the same on every call.
fused_lstm_window = functools.partial(lstm_window, fused_rounds=True)
fused_rlstm_window = functools.partial(rlstm_window, fused_rounds=True)
