"""Dynamic evaluation (thesis §4.5; Krause et al. 2017, the RMS variant; settings: thesis App. 2.A).

The evaluated text is read in windows of `max_time_steps`; after scoring a window, the weights take
one step on its loss, θ ← θ − η·g/(√MS + ε) + λ·(θ₀ − θ), where MS is the mean squared gradient
estimated on training data and λ decays the weights back towards the trained θ₀. As in the thesis,
gradient clipping is off and the l2 penalty is zero.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .config import TrainConfig
from .model import LanguageModel, detach_state
from .objective import token_log_likelihood

# Training windows used to estimate the mean squared gradients MS (Krause et al. 2017 use a
# fixed sample of the training set).
MS_WINDOWS = 32


def mean_squared_gradients(model: LanguageModel, train: Tensor, cfg: TrainConfig) -> list[Tensor]:
    """MS_i = E[g_i²] over MS_WINDOWS training windows of max_time_steps tokens (dropout off)."""
    params = [p for p in model.parameters()]
    ms = [torch.zeros_like(p) for p in params]
    steps = cfg.max_time_steps
    n, batch = train.shape
    windows = 0
    state = model.zero_state(batch)
    model.eval()
    for start in range(0, n - 1, steps):
        end = min(start + steps, n - 1)
        logits, state = model(train[start:end], state)
        loss = -token_log_likelihood(logits, train[start + 1 : end + 1]).sum(0).mean()
        grads = torch.autograd.grad(loss, params)
        for m, g in zip(ms, grads):
            m.add_(g.pow(2))
        state = detach_state(state)
        windows += 1
        if windows >= MS_WINDOWS:
            break
    return [m / max(1, windows) for m in ms]


def dynamic_evaluate(model: LanguageModel, data: Tensor, ms: list[Tensor], cfg: TrainConfig) -> float:
    """Mean nats/token on a batchified split [N, B] while adapting the weights; restores them after."""
    params = [p for p in model.parameters()]
    theta0 = [p.detach().clone() for p in params]
    scale = [1.0 / (m.sqrt() + cfg.dyneval_epsilon) for m in ms]
    lr, decay = cfg.dyneval_learning_rate, cfg.dyneval_decay_rate
    n, batch = data.shape
    state = model.zero_state(batch)
    total, count = 0.0, 0
    model.eval()
    try:
        for start in range(0, n - 1, cfg.max_time_steps):
            end = min(start + cfg.max_time_steps, n - 1)
            y = data[start + 1 : end + 1]
            logits, state = model(data[start:end], state)
            ll = token_log_likelihood(logits, y)
            total -= ll.sum().item()
            count += y.numel()
            grads = torch.autograd.grad(-ll.sum(0).mean(), params)
            with torch.no_grad():
                for p, g, s, p0 in zip(params, grads, scale, theta0):
                    p.sub_(lr * g * s).add_(decay * (p0 - p))
            state = detach_state(state)
    finally:
        with torch.no_grad():
            for p, p0 in zip(params, theta0):
                p.copy_(p0)
    return total / count
