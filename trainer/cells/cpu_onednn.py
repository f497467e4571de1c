"""Float32 matrix products for the fused cells through oneDNN, the library torch.nn.LSTM uses on CPU.

PyTorch sends a dense float32 `torch.mm` on x86 to MKL, whose sgemm takes its AVX2 path on AMD
CPUs: 96 GFLOP/s on one core of an AVX-512 EPYC, where oneDNN's AVX-512 kernels reach 200-215
(bench/trainer_speed.py prints both). The only call that runs a dense, strided float32 product
through oneDNN is `torch.ops.mkldnn._linear_pointwise`, the op Inductor lowers `nn.Linear` to on
CPU; the public `Tensor.to_mkldnn` route reaches only 110-150 GFLOP/s because of its layout copies.
That op is private, so `available()` checks the torch version and probes it against `torch.mm`
once; anything unexpected falls back to `torch.mm`, as does every non-CPU or non-float32 tensor.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

# torch.ops.mkldnn._linear_pointwise(input, weight[out, in], bias, "none", [], "") has had this
# signature since torch 2.0; the packed-weight form (_reorder_linear_weight) since 2.1.
MIN_TORCH = (2, 1)
# Tests switch this off to compare both paths.
ENABLED = True


@functools.cache
def _probe() -> bool:
    """True when the private op exists here and computes what torch.mm computes."""
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    if version < MIN_TORCH or not torch.backends.mkldnn.is_available():
        return False
    try:
        gen = torch.Generator().manual_seed(0)
        a, b = torch.randn(5, 7, generator=gen), torch.randn(7, 3, generator=gen)
        bias = torch.randn(3, generator=gen)
        packed = torch.ops.mkldnn._reorder_linear_weight(b.t().contiguous(), 5)
        out = (
            torch.ops.mkldnn._linear_pointwise(a.t().contiguous().t(), b.t(), bias, "none", [], ""),
            torch.ops.mkldnn._linear_pointwise(a, packed, None, "none", [], ""),
        )
    except (AttributeError, RuntimeError):
        return False
    expected = torch.addmm(bias, a, b)
    return torch.allclose(out[0], expected, atol=1e-5) and torch.allclose(out[1], expected - bias, atol=1e-5)


def available(like: Tensor) -> bool:
    """Whether products of tensors like `like` go through oneDNN."""
    return ENABLED and like.device.type == "cpu" and like.dtype == torch.float32 and _probe()


def _dense(t: Tensor) -> bool:
    """Whether t is a row-major or a transposed (column-major) dense matrix, as oneDNN needs."""
    return t.is_contiguous() or t.t().is_contiguous()


def matmul(a: Tensor, b: Tensor, bias: Tensor | None = None) -> Tensor:
    """a @ b (+ bias) for 2-D a, b; dense transposed views go to oneDNN without a copy.

    Operands with gaps between rows (slices of wider buffers) go to torch.mm, which reads any
    strides, rather than being copied.
    """
    if available(a) and _dense(a) and _dense(b):
        return torch.ops.mkldnn._linear_pointwise(a, b.t(), bias, "none", [], "")
    return torch.mm(a, b) if bias is None else torch.addmm(bias, a, b)


class RightFactor:
    """A fixed right factor W [in, out] for many products u @ W with `rows`-row u's (one per step).

    On the oneDNN path W is reordered once into the kernel's blocked layout, as oneDNN's own RNN
    primitive does, instead of once per product.
    """

    def __init__(self, weight: Tensor, rows: int) -> None:
        self.onednn = available(weight)
        if self.onednn:  # oneDNN's weight is [out, in]: W^T, and for W = V^T that is V itself
            w_t = weight.t()
            w_t = w_t if w_t.is_contiguous() else w_t.contiguous()
            self.weight = torch.ops.mkldnn._reorder_linear_weight(w_t, rows)
        else:
            self.weight = weight

    def __call__(self, u: Tensor, bias: Tensor | None = None) -> Tensor:
        if self.onednn:
            return torch.ops.mkldnn._linear_pointwise(u, self.weight, bias, "none", [], "")
        return torch.mm(u, self.weight) if bias is None else torch.addmm(bias, u, self.weight)
