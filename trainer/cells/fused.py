"""The capped LSTM (and Mogrifier LSTM) recurrence over a BPTT window as one autograd Function.

The forward pass writes every step into preallocated [T, ...] buffers; the hand-written backward
walks the window in reverse with no autograd graph, collects each step's pre-activation gradients
in [T, ...] buffers, and takes every weight gradient as one GEMM over all T·B rows, as cuDNN and
oneDNN do. Equations: thesis §4.1 (LSTM, capped input gate), Mogrifier paper §2 eqs. (1)-(2).

Mogrifier values are indexed as in the paper: V[-1] = x, V[0] = h^0 = ĥ_prev, and round i >= 1
computes V[i] = 2σ(z_i) ⊙ V[i-2] with z_i = G_i(V[i-1]) (a Q^i gate for odd i, an R^i gate for
even i); x↑ and h↑ are the last odd- and even-indexed values.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable


def _lstm_cell(g: Tensor, c_prev: Tensor, acts: Tensor, c_out: Tensor, tanh_c: Tensor, h_out: Tensor) -> None:
    """Capped LSTM step from pre-activations g = [i, j, f, o] (thesis §4.1), into the given buffers."""
    n = c_prev.shape[1]
    torch.sigmoid(g, out=acts)  # i, f, o = σ(·); the j block is overwritten next
    torch.tanh(g[:, n : 2 * n], out=acts[:, n : 2 * n])  # j = tanh(·)
    i, j, f, o = acts.chunk(4, dim=1)
    torch.mul(f, c_prev, out=c_out)
    c_out.addcmul_(torch.minimum(i, 1.0 - f), j)  # c = f ⊙ c_prev + min(i, 1 - f) ⊙ j
    torch.tanh(c_out, out=tanh_c)
    torch.mul(o, tanh_c, out=h_out)  # h = o ⊙ tanh(c)


def _lstm_cell_backward(
    dh: Tensor, dc: Tensor, acts: Tensor, c_prev: Tensor, tanh_c: Tensor, dg: Tensor
) -> Tensor:
    """Writes dL/dg into dg and returns dL/dc_prev for one capped LSTM step."""
    i, j, f, o = acts.chunk(4, dim=1)
    dg_i, dg_j, dg_f, dg_o = dg.chunk(4, dim=1)
    dh_o = dh * o
    dc = torch.addcmul(dc, dh_o, 1.0 - tanh_c * tanh_c)  # through h = o ⊙ tanh(c)
    torch.mul(dh_o, tanh_c, out=dg_o).mul_(1.0 - o)  # dL/dz_o = dh ⊙ tanh(c) ⊙ o(1 - o)
    one_minus_f = 1.0 - f
    take_i = i < one_minus_f  # which side of min(i, 1 - f) is active
    d_cap = dc * j
    torch.mul(dc, torch.where(take_i, i, one_minus_f), out=dg_j).mul_(1.0 - j * j)
    torch.mul(d_cap, take_i, out=dg_i).mul_(i).mul_(1.0 - i)
    torch.mul(dc, c_prev, out=dg_f).sub_(d_cap * ~take_i).mul_(f).mul_(one_minus_f)
    return dc * f


def _gate_forward(u: Tensor, params: tuple[Tensor, ...], p_out: Tensor | None) -> Tensor:
    """z = Q u + b for a full-rank (weight, bias) or low-rank (w_in, w_out, bias) gate."""
    if p_out is None:
        weight, bias = params
        return torch.addmm(bias, u, weight)
    w_in, w_out, bias = params
    torch.mm(u, w_in, out=p_out)
    return torch.addmm(bias, p_out, w_out)


def _per_round(ranks: tuple[int, ...], params: tuple[Tensor, ...]) -> list[tuple[Tensor, ...]]:
    """Regroup the flat gate tensors into one (w_in, w_out, bias) or (weight, bias) per round."""
    gates, k = [], 0
    for rank in ranks:
        size = 3 if rank > 0 else 2
        gates.append(params[k : k + size])
        k += size
    return gates


class CappedLSTMWindow(torch.autograd.Function):
    """(h_seq, h_T, c_T) of the (Mogrifier) capped LSTM over a window; see the module docstring.

    Inputs: base [T, B, 4n] added to each step's gates (the hoisted W^x x + b when rounds = 0, the
    broadcast bias otherwise); weight: W^h [n, 4n] when rounds = 0, else [W^x; W^h] [m+n, 4n]
    applied to [x↑, h↑]; x [T, B, m] (used when rounds > 0); h0, c0 [B, n]; mask [B, n] or None;
    ranks: one rank per Mogrifier round (k <= 0: full rank); gate_params: each round's tensors.
    """

    @staticmethod
    def forward(ctx, base, weight, x, h0, c0, mask, ranks, *gate_params):  # type: ignore[override]
        steps, batch, four_n = base.shape
        n = four_n // 4
        rounds = len(ranks)
        new = base.new_empty
        gates = _per_round(ranks, gate_params)
        m = x.shape[2]
        acts, tanh_c = new(steps, batch, four_n), new(steps, batch, n)
        cells, h_seq = new(steps + 1, batch, n), new(steps, batch, n)
        if rounds == 0:
            h_hat = u_all = new(steps, batch, n)  # the main GEMM multiplies ĥ_prev by W^h
        else:  # it multiplies [x↑, h↑]; the rounds producing x↑ and h↑ write straight into it
            u_all = new(steps, batch, m + n)
            x_up, h_up = u_all[..., :m], u_all[..., m:]
            h_hat = h_up if rounds == 1 else new(steps, batch, n)  # V[0]
        values = [  # V[1..r]
            (x_up if i % 2 else h_up) if i >= rounds - 1 else new(steps, batch, m if i % 2 else n)
            for i in range(1, rounds + 1)
        ]
        sigmas = [new(steps, batch, m if i % 2 else n) for i in range(1, rounds + 1)]
        lows = [new(steps, batch, r) if r > 0 else None for r in ranks]
        cells[0] = c0
        h = h0
        for t in range(steps):
            if mask is None:
                h_hat[t] = h
            else:
                torch.mul(h, mask, out=h_hat[t])  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            v = {-1: x[t] if rounds else None, 0: h_hat[t]}
            for i in range(1, rounds + 1):  # Mogrifier paper §2 eqs. (1)-(2)
                z = _gate_forward(v[i - 1], gates[i - 1], None if lows[i - 1] is None else lows[i - 1][t])
                torch.sigmoid(z, out=sigmas[i - 1][t])
                torch.mul(sigmas[i - 1][t], v[i - 2], out=values[i - 1][t]).mul_(2.0)  # V[i] = 2σ(z) ⊙ V[i-2]
                v[i] = values[i - 1][t]
            g = torch.addmm(base[t], u_all[t], weight)
            _lstm_cell(g, cells[t], acts[t], cells[t + 1], tanh_c[t], h_seq[t])
            h = h_seq[t]
        ctx.save_for_backward(
            weight, x, mask, acts, tanh_c, cells, h_hat, u_all, *values, *sigmas, *lows, *gate_params
        )
        ctx.ranks = ranks
        return h_seq, h_seq[-1].clone(), cells[-1].clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, d_h_seq, d_h_last, d_c_last):  # type: ignore[override]
        ranks = ctx.ranks
        rounds = len(ranks)
        weight, x, mask, acts, tanh_c, cells, h_hat, u_all, *rest = ctx.saved_tensors
        values, sigmas, lows = rest[:rounds], rest[rounds : 2 * rounds], rest[2 * rounds : 3 * rounds]
        gates = _per_round(ranks, tuple(rest[3 * rounds :]))
        steps, batch, n = h_hat.shape
        m = x.shape[2]
        d_h_seq = torch.zeros_like(h_hat) if d_h_seq is None else d_h_seq
        dg_all = torch.empty_like(acts)
        dz_all = [torch.empty_like(s) for s in sigmas]
        dlow_all = [None if low is None else torch.empty_like(low) for low in lows]
        dx_all = torch.empty_like(x) if rounds else None
        dh = torch.zeros_like(h_hat[0]) if d_h_last is None else d_h_last
        dc = torch.zeros_like(h_hat[0]) if d_c_last is None else d_c_last
        # Contiguous transposes: on MKL the per-step dU = dG W^T runs ~20% faster as a plain product.
        weight_t = weight.t().contiguous()
        gates_t = [tuple(p.t().contiguous() for p in params[:-1]) for params in gates]
        for t in reversed(range(steps)):
            dh = dh + d_h_seq[t]
            dc = _lstm_cell_backward(dh, dc, acts[t], cells[t], tanh_c[t], dg_all[t])
            du = dg_all[t] @ weight_t
            if rounds == 0:
                dv = {0: du}
            else:
                d_x_up, d_h_up = du[:, :m], du[:, m:]
                dv = {rounds: d_x_up, rounds - 1: d_h_up} if rounds % 2 else {rounds - 1: d_x_up, rounds: d_h_up}
                v = {-1: x[t], 0: h_hat[t], **{i: values[i - 1][t] for i in range(1, rounds + 1)}}
                for i in range(rounds, 0, -1):
                    s, d_out = sigmas[i - 1][t], dv.pop(i)
                    dz = torch.mul(d_out, v[i], out=dz_all[i - 1][t]).mul_(1.0 - s)  # d/dz of 2σ(z) ⊙ V[i-2]
                    dv[i - 2] = torch.addcmul(dv[i - 2], d_out, s, value=2.0) if i - 2 in dv else 2.0 * d_out * s
                    if lows[i - 1] is None:
                        (w_in_t,) = gates_t[i - 1]
                        d_low = dz
                    else:
                        w_in_t, w_out_t = gates_t[i - 1]
                        d_low = torch.mm(dz, w_out_t, out=dlow_all[i - 1][t])
                    dv[i - 1] = torch.addmm(dv[i - 1], d_low, w_in_t) if i - 1 in dv else d_low @ w_in_t
                dx_all[t] = dv[-1]
            dh = dv[0] if mask is None else dv[0] * mask
        flat = lambda a: a.reshape(-1, a.shape[-1])  # noqa: E731
        d_weight = flat(u_all).t() @ flat(dg_all)
        d_gates = []
        for i in range(1, rounds + 1):
            u_in = h_hat if i == 1 else values[i - 2]  # V[i-1]
            dz = flat(dz_all[i - 1])
            if lows[i - 1] is None:
                d_gates += [flat(u_in).t() @ dz, dz.sum(0)]
            else:
                d_gates += [flat(u_in).t() @ flat(dlow_all[i - 1]), flat(lows[i - 1]).t() @ dz, dz.sum(0)]
        d_base = dg_all if ctx.needs_input_grad[0] else None
        return (d_base, d_weight, dx_all, dh, dc, None, None, *d_gates)
