"""A capped LSTM (or Mogrifier LSTM) layer over a BPTT window as one autograd Function.

The forward pass writes every step into preallocated buffers; the hand-written backward walks the
window in reverse with no autograd graph and takes weight gradients as GEMMs over many steps' rows
at once, as cuDNN and oneDNN do, instead of a thin GEMM per step. Measured on the PTB-size layer
(bench/trainer_speed.py) this beat per-step autograd by ~5-8%. The large products and the per-step
recurrent one (with its weight reordered once per window) run through oneDNN (cpu_onednn.py): on an
AVX-512 EPYC, where torch.mm's MKL takes its AVX2 path, that made the layer ~1.7x faster.
Measured and not kept: torch.compile of the elementwise backward step (36 -> 5 ms per 70 steps,
but 1-2 minutes of compilation in every new process, which short tuning trials cannot repay);
computing the backward's local derivatives for a whole chunk of steps at once (memory-bound
there, no faster than per step, where a step's [B, n] tensors stay in L2); TorchScript (matched
eager). Equations: thesis §4.1 (LSTM, capped input gate), Mogrifier paper §2.

Mogrifier values are indexed as in the paper: V[-1] = x, V[0] = h^0 = ĥ_prev, and round i >= 1
computes V[i] = 2σ(z_i) ⊙ V[i-2] with z_i = G_i(V[i-1]) (a Q^i gate for odd i, an R^i gate for
even i); x↑ and h↑ are the last odd- and even-indexed values.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from . import cpu_onednn
from .cpu_onednn import RightFactor


def _lstm_cell(g: Tensor, c_prev: Tensor, c_out: Tensor, tanh_c: Tensor, h_out: Tensor) -> Tensor:
    """Capped LSTM step from pre-activations g = [i, j, f, o] (thesis §4.1), into the given buffers.

    Overwrites g with the activations [i, j, f, o] and returns it for the backward pass.
    """
    n = c_prev.shape[1]
    g[:, :n].sigmoid_()  # i = σ(·)
    g[:, n : 2 * n].tanh_()  # j = tanh(·)
    g[:, 2 * n :].sigmoid_()  # f, o = σ(·)
    acts = g
    i, j, f, o = acts.chunk(4, dim=1)
    torch.mul(f, c_prev, out=c_out)
    c_out.addcmul_(torch.minimum(i, 1.0 - f), j)  # c = f ⊙ c_prev + min(i, 1 - f) ⊙ j
    torch.tanh(c_out, out=tanh_c)
    torch.mul(o, tanh_c, out=h_out)  # h = o ⊙ tanh(c)
    return acts


def _lstm_cell_backward(
    dh: Tensor, dc: Tensor, acts: Tensor, c_prev: Tensor, tanh_c: Tensor, dg: Tensor
) -> Tensor:
    """Writes dL/dg into dg and returns dL/dc_prev for one capped LSTM step."""
    i, j, f, o = acts.chunk(4, dim=1)
    dg_i, dg_j, dg_f, dg_o = dg.chunk(4, dim=1)
    dh_o = dh * o
    dc = torch.addcmul(dc, dh_o, 1.0 - tanh_c * tanh_c)  # through h = o ⊙ tanh(c)
    torch.mul(dh_o, tanh_c, out=dg_o).mul_(1.0 - o)  # dL/dz_o = dh ⊙ tanh(c) ⊙ o(1 - o)
    # c = f ⊙ c_prev + min(i, 1 - f) ⊙ j: the cap's gradient goes to i where i < 1 - f and to f
    # (negated) elsewhere; each gate's gradient is then scaled by σ' = σ(1 - σ) or tanh' = 1 - j².
    one_minus_f = 1.0 - f
    take_i = i < one_minus_f
    d_cap = dc * j
    torch.mul(dc, torch.where(take_i, i, one_minus_f), out=dg_j).mul_(1.0 - j * j)
    torch.mul(d_cap, take_i, out=dg_i).mul_(i).mul_(1.0 - i)
    torch.mul(dc, c_prev, out=dg_f).sub_(d_cap * ~take_i).mul_(f).mul_(one_minus_f)
    return dc * f


def _gate_forward(u: Tensor, params: tuple[Tensor, ...], p_out: Tensor | None, z_out: Tensor) -> Tensor:
    """z = Q u + b into z_out for a full-rank (weight, bias) or low-rank (w_in, w_out, bias) gate."""
    if p_out is None:
        weight, bias = params
        return torch.addmm(bias, u, weight, out=z_out)
    w_in, w_out, bias = params
    torch.mm(u, w_in, out=p_out)
    return torch.addmm(bias, p_out, w_out, out=z_out)


def _per_round(ranks: tuple[int, ...], params: tuple[Tensor, ...]) -> list[tuple[Tensor, ...]]:
    """Regroup the flat gate tensors into one (w_in, w_out, bias) or (weight, bias) per round."""
    gates, k = [], 0
    for rank in ranks:
        size = 3 if rank > 0 else 2
        gates.append(params[k : k + size])
        k += size
    return gates


# Window-sized [T, B, 4n] tensors are large enough that the allocator maps them fresh from the OS on
# every call (glibc: blocks >= 32 MiB) and each page then faults on first touch. Gate-sized work is
# done in equal chunks of time steps whose buffer stays under this many bytes; GEMMs over a chunk's
# C·B rows (2240 at the PTB size) still run near the machine's matmul peak.
CHUNK_BYTES = 24 * 2**20


def _chunk_steps(steps: int, batch: int, width: int, item_size: int) -> int:
    """Steps per chunk: the fewest equal chunks whose [C, B, width] buffer fits CHUNK_BYTES."""
    per_step = max(1, batch * width * item_size)
    chunks = -(-steps * per_step // CHUNK_BYTES)  # ceiling division
    return max(1, min(-(-steps // max(1, chunks)), CHUNK_BYTES // per_step))


class CappedLSTMWindow(torch.autograd.Function):
    """(h_seq, h_T, c_T) of the (Mogrifier) capped LSTM layer over a window; see the module docstring.

    Inputs: x [T, B, m]; w_x [m, 4n], w_h [n, 4n], bias [4n] (LSTMCell's parameters); h0, c0
    [B, n]; mask [B, n] or None; ranks: one rank per Mogrifier round (k <= 0: full rank), empty
    for the LSTM; gate_params: each round's tensors, (w_in, w_out, bias) or (weight, bias).
    With no rounds, W^x x + b is computed a chunk of steps at a time ahead of the recurrence;
    with rounds, x↑ depends on h_prev and [x↑, h↑] @ [W^x; W^h] is one GEMM per step.
    """

    @staticmethod
    def forward(ctx, x, w_x, w_h, bias, h0, c0, mask, ranks, *gate_params):
        steps, batch, m = x.shape
        n = w_h.shape[0]
        rounds = len(ranks)
        new = x.new_empty
        gates = _per_round(ranks, gate_params)
        tanh_c, cells, h_seq = new(steps, batch, n), new(steps + 1, batch, n), new(steps, batch, n)
        if rounds == 0:
            h_hat = u_all = new(steps, batch, n)  # the recurrent GEMM multiplies ĥ_prev by W^h
            chunk = _chunk_steps(steps, batch, 4 * n, x.element_size())
            recurrent = RightFactor(w_h, batch)
        else:  # it multiplies [x↑, h↑]; the rounds producing x↑ and h↑ write straight into it
            recurrent = RightFactor(torch.cat([w_x, w_h], dim=0), batch)
            u_all = new(steps, batch, m + n)
            x_up, h_up = u_all[..., :m], u_all[..., m:]
            h_hat = h_up if rounds == 1 else new(steps, batch, n)  # V[0]
        values = [  # V[1..r]
            (x_up if i % 2 else h_up) if i >= rounds - 1 else new(steps, batch, m if i % 2 else n)
            for i in range(1, rounds + 1)
        ]
        sigmas = [new(steps, batch, m if i % 2 else n) for i in range(1, rounds + 1)]  # 2σ(z_i)
        lows = [new(steps, batch, r) if r > 0 else None for r in ranks]
        acts = []
        cells[0] = c0
        h = h0
        for t in range(steps):
            if mask is None:
                h_hat[t] = h
            else:
                torch.mul(h, mask, out=h_hat[t])  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            if rounds == 0:
                if t % chunk == 0:  # W^x x + b for the next chunk of steps, hoisted out of the loop
                    xs = x[t : t + chunk].reshape(-1, m)
                    gx_chunk = cpu_onednn.matmul(xs, w_x, bias).view(-1, batch, 4 * n)
                g = recurrent(h_hat[t]).add_(gx_chunk[t % chunk])
            else:
                v = {-1: x[t], 0: h_hat[t]}
                for i in range(1, rounds + 1):  # Mogrifier paper §2 eqs. (1)-(2)
                    low = None if lows[i - 1] is None else lows[i - 1][t]
                    s, v[i] = sigmas[i - 1][t], values[i - 1][t]
                    _gate_forward(v[i - 1], gates[i - 1], low, s).sigmoid_().mul_(2.0)  # s = 2σ(z_i)
                    torch.mul(s, v[i - 2], out=v[i])  # V[i] = 2σ(z_i) ⊙ V[i-2]
                g = recurrent(u_all[t], bias)
            acts.append(_lstm_cell(g, cells[t], cells[t + 1], tanh_c[t], h_seq[t]))
            h = h_seq[t]
        ctx.save_for_backward(
            x, w_x, w_h, mask, tanh_c, cells, h_hat, u_all, *values, *sigmas, *lows, *gate_params, *acts
        )
        ctx.ranks = ranks
        return h_seq, h_seq[-1].clone(), cells[-1].clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, d_h_seq, d_h_last, d_c_last):
        # Back through the window in one reverse loop: the kernel's body, over 60 lines on purpose
        # (split, each step would pass a dozen saved tensors and running gradients between helpers,
        # the Python overhead this fused path exists to remove).
        ranks = ctx.ranks
        rounds = len(ranks)
        x, w_x, w_h, mask, tanh_c, cells, h_hat, u_all, *rest = ctx.saved_tensors
        steps, batch, n = h_hat.shape
        m = x.shape[2]
        values, sigmas, lows = rest[:rounds], rest[rounds : 2 * rounds], rest[2 * rounds : 3 * rounds]
        gates = _per_round(ranks, tuple(rest[3 * rounds : len(rest) - steps]))
        acts = rest[len(rest) - steps :]
        d_h_seq = torch.zeros_like(h_hat) if d_h_seq is None else d_h_seq
        dz_all = [torch.empty_like(s) for s in sigmas]
        dlow_all = [None if low is None else torch.empty_like(low) for low in lows]
        dx = x.new_empty(x.shape)  # contiguous, whatever x's layout
        dh = torch.zeros_like(h_hat[0]) if d_h_last is None else d_h_last
        dc = torch.zeros_like(h_hat[0]) if d_c_last is None else d_c_last
        weight = w_h if rounds == 0 else torch.cat([w_x, w_h], dim=0)
        # On oneDNN W^T's blocked layout is made from W directly; on MKL the per-step dU = dG W^T
        # runs ~20% faster with a contiguous transpose.
        recurrent_t = RightFactor(
            weight.t() if cpu_onednn.available(weight) else weight.t().contiguous(), batch
        )
        gates_t = [tuple(p.t().contiguous() for p in params[:-1]) for params in gates]
        d_weight = torch.zeros_like(weight)
        d_w_x, d_bias = torch.zeros_like(w_x), w_x.new_zeros(4 * n)
        chunk = _chunk_steps(steps, batch, 4 * n, x.element_size())
        dg_chunk = x.new_empty(chunk, batch, 4 * n)
        flat = lambda a: a.reshape(-1, a.shape[-1])  # noqa: E731
        for t in reversed(range(steps)):
            dg = dg_chunk[t % chunk]
            dh = dh + d_h_seq[t]
            dc = _lstm_cell_backward(dh, dc, acts[t], cells[t], tanh_c[t], dg)
            du = recurrent_t(dg)
            if rounds == 0:
                dv = {0: du}
            else:
                last_x = rounds if rounds % 2 else rounds - 1  # x↑ = V[last_x], h↑ = the other one
                dv = {last_x: du[:, :m], (2 * rounds - 1) - last_x: du[:, m:]}
                v = {-1: x[t], 0: h_hat[t], **{i: values[i - 1][t] for i in range(1, rounds + 1)}}
                for i in range(rounds, 0, -1):  # back through V[i] = 2σ(z_i) ⊙ V[i-2]
                    s, d_out = sigmas[i - 1][t], dv.pop(i)  # s = 2σ(z_i)
                    d_gated = d_out * s  # dL/dV[i-2] = dL/dV[i] ⊙ 2σ(z_i)
                    # dL/dz_i = dL/dV[i] ⊙ V[i] ⊙ (1 - σ(z_i)) = V[i] ⊙ (dL/dV[i] - dL/dV[i-2] / 2)
                    dz = torch.mul(v[i], torch.add(d_out, d_gated, alpha=-0.5), out=dz_all[i - 1][t])
                    dv[i - 2] = d_gated  # V[i-2]'s other reader, round i-1, comes next
                    if lows[i - 1] is None:
                        (w_in_t,) = gates_t[i - 1]
                        d_low = dz
                    else:
                        w_in_t, w_out_t = gates_t[i - 1]
                        d_low = torch.mm(dz, w_out_t, out=dlow_all[i - 1][t])
                    # V[i-1] is also the LSTM's input (i = r) or gated by round i+1, so dv[i-1] exists.
                    dv[i - 1] = torch.addmm(dv[i - 1], d_low, w_in_t)
                dx[t] = dv[-1]
            dh = dv[0] if mask is None else dv[0] * mask
            if t % chunk == 0:  # the chunk's weight gradients as GEMMs over all its C·B rows
                span = slice(t, min(t + chunk, steps))
                dgs = flat(dg_chunk[: span.stop - t])
                d_weight += cpu_onednn.matmul(flat(u_all[span]).t(), dgs)
                d_bias += dgs.sum(0)
                if rounds == 0:
                    d_w_x += cpu_onednn.matmul(flat(x[span]).t(), dgs)
                    dx[span].view(-1, m).copy_(cpu_onednn.matmul(dgs, w_x.t()))
        if rounds:
            d_w_x, d_w_h = d_weight[:m], d_weight[m:]
        else:
            d_w_h = d_weight
        d_gates = []
        for i in range(1, rounds + 1):
            u_in = h_hat if i == 1 else values[i - 2]  # V[i-1]
            dz = flat(dz_all[i - 1])
            if lows[i - 1] is None:
                d_gates += [cpu_onednn.matmul(flat(u_in).t(), dz), dz.sum(0)]
            else:
                d_w_in = cpu_onednn.matmul(flat(u_in).t(), flat(dlow_all[i - 1]))
                d_gates += [d_w_in, cpu_onednn.matmul(flat(lows[i - 1]).t(), dz), dz.sum(0)]
        return (dx, d_w_x, d_w_h, d_bias, dh, dc, None, None, *d_gates)
