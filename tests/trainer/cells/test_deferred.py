"""DeferredMatmul: per-step products whose weight gradient is one GEMM per window."""

from __future__ import annotations

import pytest
import torch

from trainer.cells.deferred import DeferredMatmul, zeros_base


def run_loop(weight, base, u0, deferred: bool):
    """A small recurrence u_{t+1} = tanh(base[t] + u_t @ W), summed outputs."""
    step = DeferredMatmul(weight, base) if deferred else (lambda t, u: torch.addmm(base[t], u, weight))
    u, outs = u0, []
    for t in range(base.shape[0]):
        u = torch.tanh(step(t, u))
        outs.append(u)
    return torch.stack(outs)


def test_gradients_equal_plain_autograd():
    torch.manual_seed(0)
    weight = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    base = torch.randn(6, 3, 4, dtype=torch.float64, requires_grad=True)
    u0 = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    readout = torch.randn(6, 3, 4, dtype=torch.float64)
    grads = []
    for deferred in (True, False):
        out = run_loop(weight, base, u0, deferred)
        grads.append(torch.autograd.grad((out * readout).sum(), (weight, base, u0)))
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_zero_base_and_no_grad():
    weight = torch.randn(4, 2, requires_grad=True)
    u = torch.randn(3, 4)
    step = DeferredMatmul(weight, zeros_base(u, 1, 3, 2))
    out = step(0, u)
    torch.testing.assert_close(out, u @ weight)
    out.sum().backward()
    torch.testing.assert_close(weight.grad, u.t() @ torch.ones(3, 2))
    with torch.no_grad():
        assert not DeferredMatmul(weight, zeros_base(u, 1, 3, 2))(0, u).requires_grad


def test_a_skipped_step_is_an_error():
    weight = torch.randn(4, 4, requires_grad=True)
    base = torch.randn(3, 2, 4)
    step = DeferredMatmul(weight, base)
    out = step(0, torch.randn(2, 4)) + step(2, torch.randn(2, 4))  # step 1 never ran
    with pytest.raises(RuntimeError, match="saw 2 step inputs for a window of 3"):
        out.sum().backward()
