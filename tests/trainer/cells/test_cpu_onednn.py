"""oneDNN products: the same values as torch.mm for strided operands, and the fallbacks."""

from __future__ import annotations

import pytest
import torch

from trainer.cells import cpu_onednn
from trainer.cells.deferred import DeferredMatmul


@pytest.mark.skipif(not cpu_onednn._probe(), reason="this torch build has no usable oneDNN linear op")
def test_matmul_of_transposed_views_matches_mm():
    torch.manual_seed(0)
    a, b, bias = torch.randn(40, 9), torch.randn(40, 13), torch.randn(9)
    assert cpu_onednn.available(a)
    torch.testing.assert_close(cpu_onednn.matmul(a.t(), b), a.t() @ b, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(cpu_onednn.matmul(b, a[::3][:13], bias), torch.addmm(bias, b, a[::3][:13]))
    factor = cpu_onednn.RightFactor(b.t().contiguous(), 6)
    u = torch.randn(6, 13)
    assert factor.onednn
    torch.testing.assert_close(factor(u), u @ b.t(), rtol=1e-5, atol=1e-5)
    bias40 = torch.randn(40)
    torch.testing.assert_close(factor(u, bias40), u @ b.t() + bias40, rtol=1e-5, atol=1e-5)


def test_float64_and_disabled_use_torch_mm(monkeypatch):
    a = torch.randn(4, 3, dtype=torch.float64)
    assert not cpu_onednn.available(a)
    assert not cpu_onednn.RightFactor(a, 2).onednn
    torch.testing.assert_close(cpu_onednn.matmul(a, a.t()), a @ a.t(), rtol=0, atol=0)
    monkeypatch.setattr(cpu_onednn, "ENABLED", False)
    assert not cpu_onednn.available(a.float())


@pytest.mark.skipif(not cpu_onednn._probe(), reason="this torch build has no usable oneDNN linear op")
def test_deferred_weight_gradient_through_onednn_matches_mm(monkeypatch):
    torch.manual_seed(0)
    weight = torch.randn(5, 6, requires_grad=True)
    base = torch.randn(4, 3, 6)
    grads = []
    for enabled in (True, False):
        monkeypatch.setattr(cpu_onednn, "ENABLED", enabled)
        step = DeferredMatmul(weight, base)
        u, outs = torch.randn(3, 5, generator=torch.Generator().manual_seed(1)), []
        for t in range(4):
            outs.append(torch.tanh(step(t, u)))
            u = outs[-1][:, :5]
        grads.append(torch.autograd.grad(torch.stack(outs).sum(), weight)[0])
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-5, atol=1e-5)
