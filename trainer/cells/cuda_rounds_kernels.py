"""Triton kernels: all Mogrifier rounds of one time step, forward and backward, one launch each.

Hand-written because no library fuses a chain of dependent low-rank products: round i reads the
whole row its predecessor wrote (Mogrifier paper §2 eqs. (1)-(2)), so the eager path launches two
products and a gate per round, forward and backward, and at PTB size trains launch-bound on CUDA.
Here one program owns BLOCK_B batch rows and walks every round over them; rows are independent, so
programs never wait on each other, and within a program a barrier orders each round's stores
before the next round's loads. The weight gradients are not taken here: the kernel writes each
round's dL/dz (and the low-rank intermediates), and the window takes U^T dZ over all its steps in
one GEMM (deferred.py), as the eager path does.

Layout (cuda_rounds.py builds it): `vals` [R+2, B, W] holds V[-1] = x, V[0] = ĥ and V[1..R]
(W = max(m, n)); `sig` [R, B, W] holds σ(z_i); `low` [R, B, KMAX] the low-rank products u W_in.
Each round's tensors lie in one flat float32 buffer `w` at the offsets of `meta` [R, 4]:
(first factor, second factor, bias, rank), the first factor being W [in, out] for full rank and
W_in [in, k] for rank k, the second W_out [k, out].

`PRECISION` is "ieee" (float32 products), "tf32" (TensorFloat-32 tensor cores) or "bf16": operands
rounded to bfloat16, multiplied exactly on TF32 tensor cores and accumulated in float32, which is
what a bfloat16 product with float32 accumulation computes. Triton's `tl.dot` would use TF32 by
default on Ampere and later; every product here names its precision.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _dot(a, b, acc, PRECISION: tl.constexpr):
    """acc + a @ b in the requested precision (module docstring)."""
    if PRECISION == "bf16":
        a = a.to(tl.bfloat16).to(tl.float32)
        b = b.to(tl.bfloat16).to(tl.float32)
        return tl.dot(a, b, acc, input_precision="tf32")
    else:
        return tl.dot(a, b, acc, input_precision=PRECISION)


@triton.jit
def _copy_rows(src, dst, rows, B, width, src_stride, dst_stride, BLOCK: tl.constexpr):
    """dst[rows, :width] = src[rows, :width] for this program's rows."""
    for c0 in range(0, width, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        keep = (rows[:, None] < B) & (cols[None, :] < width)
        v = tl.load(src + rows[:, None] * src_stride + cols[None, :], mask=keep, other=0.0)
        tl.store(dst + rows[:, None] * dst_stride + cols[None, :], v, mask=keep)


@triton.jit
def _product(
    acc, a_base, a_stride, a_width, w, b_off, stride_k, stride_o, rows, cols, B, out_w,
    PRECISION: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """acc + A[rows, :a_width] @ F[:a_width, cols], F[k, o] = w[b_off + k * stride_k + o * stride_o]:
    a factor as stored (stride_o 1) or transposed (stride_k 1), for the backward's products."""
    for k0 in range(0, a_width, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(
            a_base + rows[:, None] * a_stride + ks[None, :],
            mask=(rows[:, None] < B) & (ks[None, :] < a_width),
            other=0.0,
        )
        b = tl.load(
            w + b_off + ks[:, None] * stride_k + cols[None, :] * stride_o,
            mask=(ks[:, None] < a_width) & (cols[None, :] < out_w),
            other=0.0,
        )
        acc = _dot(a, b, acc, PRECISION)
    return acc


@triton.jit
def rounds_forward(
    x, h, w, meta, vals, sig, low, B, M, N, W, KMAX, ROUNDS,
    PRECISION: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_O: tl.constexpr,
):  # fmt: skip
    """V[i] = 2σ(z_i) ⊙ V[i-2], z_i = G_i(V[i-1]) for i = 1..R (Mogrifier paper §2 eqs. (1)-(2))."""
    rows = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    plane = B * W
    _copy_rows(x, vals, rows, B, M, M, W, BLOCK_O)  # V[-1] = x
    _copy_rows(h, vals + plane, rows, B, N, N, W, BLOCK_O)  # V[0] = ĥ_prev
    tl.debug_barrier()
    for i in range(1, ROUNDS + 1):
        odd = i % 2  # odd rounds gate x with a Q^i reading h; even ones gate h with an R^i reading x
        in_w = odd * N + (1 - odd) * M
        out_w = odd * M + (1 - odd) * N
        first = tl.load(meta + (i - 1) * 4)
        second = tl.load(meta + (i - 1) * 4 + 1)
        bias = tl.load(meta + (i - 1) * 4 + 2)
        rank = tl.load(meta + (i - 1) * 4 + 3)
        u = vals + i * plane  # V[i-1]
        a_base, a_stride, a_width, b_off = u, W, in_w, first
        if rank > 0:  # low rank: p = u W_in first, then z = p W_out + b
            p = low + (i - 1) * B * KMAX
            for k0 in range(0, rank, BLOCK_K):
                ks = k0 + tl.arange(0, BLOCK_K)
                acc = _product(
                    tl.zeros((BLOCK_B, BLOCK_K), dtype=tl.float32),
                    u, W, in_w, w, first, rank, 1, rows, ks, B, rank, PRECISION, BLOCK_K,
                )  # fmt: skip
                tl.store(
                    p + rows[:, None] * KMAX + ks[None, :],
                    acc,
                    mask=(rows[:, None] < B) & (ks[None, :] < rank),
                )
            tl.debug_barrier()
            a_base, a_stride, a_width, b_off = p, KMAX, rank, second
        for o0 in range(0, out_w, BLOCK_O):
            cols = o0 + tl.arange(0, BLOCK_O)
            keep = (rows[:, None] < B) & (cols[None, :] < out_w)
            z = _product(
                tl.zeros((BLOCK_B, BLOCK_O), dtype=tl.float32),
                a_base, a_stride, a_width, w, b_off, out_w, 1, rows, cols, B, out_w, PRECISION, BLOCK_K,
            )  # fmt: skip
            z += tl.load(w + bias + cols, mask=cols < out_w, other=0.0)[None, :]
            s = tl.sigmoid(z)
            at = rows[:, None] * W + cols[None, :]
            tl.store(sig + (i - 1) * plane + at, s, mask=keep)
            v_prev = tl.load(vals + (i - 1) * plane + at, mask=keep, other=0.0)  # V[i-2]
            tl.store(vals + (i + 1) * plane + at, 2.0 * s * v_prev, mask=keep)
        tl.debug_barrier()


@triton.jit
def rounds_backward(
    d_x_up, d_h_up, w, meta, vals, sig, dvals, dz, d_low, B, M, N, W, KMAX, ROUNDS,
    PRECISION: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_O: tl.constexpr,
):  # fmt: skip
    """dL/dx, dL/dĥ (into dvals[0], dvals[1]), each round's dL/dz_i and low-rank dL/dp_i.

    Back through V[i] = 2σ(z_i) ⊙ V[i-2] for i = R..1: dL/dV[i-2] = dL/dV[i] ⊙ 2σ(z_i),
    dL/dz_i = dL/dV[i] ⊙ V[i-2] ⊙ 2σ(z_i)(1 - σ(z_i)), dL/dV[i-1] += dL/dz_i G_i^T.
    One kernel body, over 60 lines on purpose: a Triton kernel cannot hand its register tiles to a
    helper kernel, and each split would be a launch and a round trip through global memory.
    """
    rows = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    plane = B * W
    last_x = ROUNDS - 1 + ROUNDS % 2  # x↑ = V[last_x] (odd), h↑ = V[last_h]
    last_h = 2 * ROUNDS - 1 - last_x
    _copy_rows(d_x_up, dvals + (last_x + 1) * plane, rows, B, M, M, W, BLOCK_O)
    _copy_rows(d_h_up, dvals + (last_h + 1) * plane, rows, B, N, N, W, BLOCK_O)
    tl.debug_barrier()
    for r in range(0, ROUNDS):
        i = ROUNDS - r
        odd = i % 2
        in_w = odd * N + (1 - odd) * M
        out_w = odd * M + (1 - odd) * N
        first = tl.load(meta + (i - 1) * 4)
        second = tl.load(meta + (i - 1) * 4 + 1)
        rank = tl.load(meta + (i - 1) * 4 + 3)
        dz_i = dz + (i - 1) * plane
        for o0 in range(0, out_w, BLOCK_O):
            cols = o0 + tl.arange(0, BLOCK_O)
            keep = (rows[:, None] < B) & (cols[None, :] < out_w)
            at = rows[:, None] * W + cols[None, :]
            d_out = tl.load(dvals + (i + 1) * plane + at, mask=keep, other=0.0)  # dL/dV[i]
            s = tl.load(sig + (i - 1) * plane + at, mask=keep, other=0.0)
            v_prev = tl.load(vals + (i - 1) * plane + at, mask=keep, other=0.0)  # V[i-2]
            tl.store(dvals + (i - 1) * plane + at, 2.0 * s * d_out, mask=keep)  # dL/dV[i-2]
            tl.store(dz_i + at, 2.0 * d_out * v_prev * s * (1.0 - s), mask=keep)
        tl.debug_barrier()
        a_base, a_stride, a_width = dz_i, W, out_w
        if rank > 0:  # dL/dp = dL/dz W_out^T, then dL/dV[i-1] += dL/dp W_in^T
            dp = d_low + (i - 1) * B * KMAX
            for k0 in range(0, rank, BLOCK_K):
                ks = k0 + tl.arange(0, BLOCK_K)
                acc = _product(  # W_out [rank, out] read transposed
                    tl.zeros((BLOCK_B, BLOCK_K), dtype=tl.float32),
                    dz_i, W, out_w, w, second, 1, out_w, rows, ks, B, rank, PRECISION, BLOCK_K,
                )  # fmt: skip
                tl.store(
                    dp + rows[:, None] * KMAX + ks[None, :],
                    acc,
                    mask=(rows[:, None] < B) & (ks[None, :] < rank),
                )
            tl.debug_barrier()
            a_base, a_stride, a_width = dp, KMAX, rank
        for c0 in range(0, in_w, BLOCK_O):
            cols = c0 + tl.arange(0, BLOCK_O)
            keep = (rows[:, None] < B) & (cols[None, :] < in_w)
            at = rows[:, None] * W + cols[None, :]
            acc = tl.load(dvals + i * plane + at, mask=keep, other=0.0)  # dL/dV[i-1] so far
            acc = _product(  # W [in, out] or W_in [in, rank] read transposed
                acc, a_base, a_stride, a_width, w, first, 1, a_width, rows, cols, B, in_w, PRECISION, BLOCK_K
            )
            tl.store(dvals + i * plane + at, acc, mask=keep)
        tl.debug_barrier()
