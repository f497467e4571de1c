"""Recurrent matrix products whose weight gradient is taken once per BPTT window, not once per step.

Inside a time loop, autograd would compute dL/dW = u_t^T dy_t at every step (a thin, slow GEMM) and
then sum T weight-sized tensors. `DeferredMatmul` multiplies by a detached W at each step and records
the inputs u_t; when the backward pass reaches the [T, B, out] term the products were added to, it
has every dy_t, and one GEMM U^T dY over all T·B rows gives dL/dW — the way cuDNN and oneDNN batch
the weight gradients of their fused RNNs. The gradients of u_t and of the added term are untouched.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from . import cpu_onednn


class _BatchedWeightGrad(torch.autograd.Function):
    """Identity on `base`; its backward turns the stacked dY into dL/dW = U^T dY in one GEMM."""

    @staticmethod
    def forward(ctx, base: Tensor, weight: Tensor, inputs: list[Tensor]) -> Tensor:
        ctx.inputs = inputs
        ctx.weight_shape = weight.shape
        ctx.weight_dtype = weight.dtype
        return base.view_as(base)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, Tensor | None, None]:
        inputs: list[Tensor] = ctx.inputs
        if len(inputs) != grad.shape[0]:
            raise RuntimeError(
                f"DeferredMatmul saw {len(inputs)} step inputs for a window of {grad.shape[0]} steps"
            )
        grad_weight = None
        if ctx.needs_input_grad[1]:
            # Under autocast u and dY may differ in dtype (float32 and bfloat16): multiply in dY's.
            u = torch.stack(inputs).reshape(-1, ctx.weight_shape[0]).to(grad.dtype)
            grad_weight = cpu_onednn.matmul(u.t(), grad.reshape(-1, ctx.weight_shape[1]))
            grad_weight = grad_weight.to(ctx.weight_dtype)
        return (grad if ctx.needs_input_grad[0] else None), grad_weight, None


class DeferredMatmul:
    """Computes base[t] + u_t @ W for t = 0..T-1 in order, with dL/dW batched over the window.

    `base` is a [T, B, out] tensor (hoisted input projections, an expanded bias, or zeros); each
    step must be called exactly once, in order. Without autograd (no_grad, or a W that needs no
    gradient) it is a plain addmm per step.
    """

    def __init__(self, weight: Tensor, base: Tensor) -> None:
        self._inputs: list[Tensor] = []
        self._record = torch.is_grad_enabled() and weight.requires_grad
        if self._record:
            base = _BatchedWeightGrad.apply(base, weight, self._inputs)
            weight = weight.detach()
        device = weight.device.type
        if torch.is_autocast_enabled(device) and weight.dtype == torch.float32:
            # Autocast would cast the detached W at every step; cast it once per window instead.
            weight = weight.to(torch.get_autocast_dtype(device))
        self._weight = weight
        self._base = base.unbind(0)

    def __call__(self, t: int, u: Tensor) -> Tensor:
        self.record(u)
        return torch.addmm(self._base[t], u, self._weight)

    def base(self, t: int) -> Tensor:
        """Step t's added term: a kernel that computes the product itself adds this and returns its
        gradient (cuda_rounds.py), so that the window's dL/dW is still one GEMM."""
        return self._base[t]

    def record(self, u: Tensor) -> None:
        """Record the next step's input u_t when a kernel computed base[t] + u_t @ W itself."""
        if self._record:
            self._inputs.append(u.detach())


def zeros_base(like: Tensor, steps: int, batch: int, out: int) -> Tensor:
    """A [T, B, out] zero term for DeferredMatmul when the product is not added to anything hoisted."""
    return like.new_zeros(1, 1, 1).expand(steps, batch, out)
