"""Dynamic evaluation, the one implementation the trainer and `rnntune evaluate --dyneval` share.

Thesis §4.5 and App. 2.A; Krause et al. 2018 (arXiv 1709.07432), the RMS variant that lamb's
dynamic evaluation follows:

* The evaluated split is read as ONE stream (batch size 1, as lamb and Krause force at
  evaluation: the weights adapt to the local context of that stream) in windows of
  `max_time_steps`. After scoring a window, every weight takes one step on its loss:
  θ ← θ − η·g/(RMS + ε) + λ_i·(θ₀ − θ), with RMS = √MS.
* MS, the mean squared gradient, is estimated over the training data at batch size 1024
  (App. 2.A), one pass over it, or its first `dyneval_stats_batches` windows (lamb's
  tune_dyneval.sh: max_training_eval_batches=500, the training evaluation of lamb/evaluation.py
  `evaluate_all` that adds the squared gradients); a training split too short for 1024 streams of
  one window each uses the most streams it has (`stats_batch_size`).
* The decay is Krause's RMS decay: λ_i = min(λ · RMS_i / mean(RMS), 1), the global rate scaled per
  weight by its RMS gradient relative to the mean over all weights, capped at 1 (no overshoot
  past θ₀).
* As App. 2.A says, gradient clipping is off and the l2 penalty is zero; dropout is off.
* The softmax temperature is estimated first, as lamb's experiment/mogrifier/tune_dyneval.sh runs
  it (`eval_softmax_temperature=-0.8`, `eval_softmax_temperature_estimation_num_tokens=50000`,
  `batch_size=1024`; the search is lamb/evaluation.py's `evaluate_all`): static evaluation of the
  validation split's first 50,000 tokens in 1024 streams, logits multiplied by 1.06, 1.04, … down
  to 0.8 until two multipliers in a row bring no improvement; the best multiplier m then scales the
  logits of every window dynamic evaluation scores and adapts on (our temperature T = 1/m, since
  the trainer divides logits by T). The gradient statistics stay at T = 1, as lamb's are.

The per-window update is vectorised over all parameter tensors with torch._foreach_* kernels
(the multi-tensor ops torch.optim's `foreach` implementations run on); they are private API, so
their presence is checked at import and tests/trainer/test_dyneval.py checks their result
against the formula.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch
from torch import Tensor

from .config import DYNEVAL_SETTINGS, TrainConfig
from .data import batchify
from .model import LanguageModel, detach_state
from .objective import token_log_likelihood
from .temperature import TEMPERATURE_TOKENS, search_temperature

SETTINGS = DYNEVAL_SETTINGS  # declared with the other setting groups, read without PyTorch
# Batch size for estimating the mean squared gradients (thesis App. 2.A, Mogrifier paper App. A).
STATS_BATCH_SIZE = 1024
# Batch size of the evaluated stream (lamb, Krause et al. 2018).
EVAL_BATCH_SIZE = 1
# The temperature search of lamb's experiment/mogrifier/tune_dyneval.sh runs in batch_size=1024
# streams (trainer/temperature.py: lamb/evaluation.py's search over LOGIT_MULTIPLIERS).
TEMPERATURE_BATCH_SIZE = 1024

_FOREACH = (
    "_foreach_sub",
    "_foreach_mul",
    "_foreach_mul_",
    "_foreach_add",
    "_foreach_add_",
    "_foreach_addcmul_",
    "_foreach_div",
    "_foreach_sqrt",
    "_foreach_reciprocal",
    "_foreach_clamp_max_",
    "_foreach_copy_",
)
if not all(hasattr(torch, name) for name in _FOREACH):  # pragma: no cover - older torch
    raise ImportError(f"dynamic evaluation needs torch's multi-tensor ops {_FOREACH}; upgrade torch")


@dataclass
class GradientStatistics:
    """Per-parameter 1/(RMS + ε) and decay rates min(λ·RMS/mean RMS, 1), and the batch size used."""

    scale: list[Tensor]
    decay: list[Tensor]
    batch_size: int
    windows: int


def stats_batch_size(train_tokens: int, window: int) -> int:
    """1024 streams (App. 2.A), or as many as leave every stream one window of `window` tokens."""
    return max(1, min(STATS_BATCH_SIZE, train_tokens // (window + 1)))


def gradient_statistics(model: LanguageModel, train_ids: Tensor, cfg: TrainConfig) -> GradientStatistics:
    """MS over one pass of the training tokens at batch 1024 (App. 2.A), then scale and decay."""
    params = list(model.parameters())
    ms = [torch.zeros_like(p) for p in params]
    steps = cfg.max_time_steps
    batch = stats_batch_size(train_ids.numel(), steps)
    data = batchify(train_ids, batch)
    n = data.shape[0]
    state = model.zero_state(batch)
    was_training = model.training
    model.eval()
    windows = 0
    try:
        for start in range(0, n - 1, steps):
            if windows == cfg.dyneval_stats_batches:  # lamb: max_training_eval_batches
                break
            end = min(start + steps, n - 1)
            log_probs, state = model(data[start:end], state)
            loss = -token_log_likelihood(log_probs, data[start + 1 : end + 1]).sum(0).mean()
            grads = torch.autograd.grad(loss, params)
            torch._foreach_addcmul_(ms, grads, grads)
            state = detach_state(state)
            windows += 1
    finally:
        model.train(was_training)
    rms = torch._foreach_sqrt(torch._foreach_div(ms, float(windows)))
    mean_rms = cast(Tensor, sum(r.sum() for r in rms)) / sum(r.numel() for r in rms)
    scale = torch._foreach_reciprocal(torch._foreach_add(rms, cfg.dyneval_epsilon))
    # Krause et al. 2018: λ_i = λ · RMS_i / mean(RMS), capped at 1.
    decay = torch._foreach_mul(rms, cfg.dyneval_decay_rate / max(mean_rms.item(), 1e-30))
    torch._foreach_clamp_max_(decay, 1.0)
    return GradientStatistics(scale=list(scale), decay=list(decay), batch_size=batch, windows=windows)


def dyneval_update(
    params: list[Tensor], grads: list[Tensor], theta0: list[Tensor], stats: GradientStatistics, lr: float
) -> None:
    """θ ← θ + λ_i·(θ₀ − θ) − η·g/(RMS + ε), for all tensors at once (Krause et al. 2018)."""
    with torch.no_grad():
        pull = torch._foreach_sub(theta0, params)
        torch._foreach_mul_(pull, stats.decay)
        torch._foreach_add_(params, pull)
        torch._foreach_addcmul_(params, grads, stats.scale, value=-lr)


def estimate_temperature(model: LanguageModel, valid_ids: Tensor, cfg: TrainConfig) -> float:
    """The softmax temperature 1/m for dynamic evaluation, m the logit multiplier lamb's
    tune_dyneval.sh search picks: static evaluation (dropout off, no adaptation) of the first
    TEMPERATURE_TOKENS validation tokens in up to TEMPERATURE_BATCH_SIZE streams and windows of
    `max_time_steps`, multipliers tried in LOGIT_MULTIPLIERS' order until the best lies
    TEMPERATURE_PATIENCE candidates back (lamb/evaluation.py `evaluate_all`; trainer/temperature.py)."""
    return search_temperature(
        model, valid_ids, TEMPERATURE_BATCH_SIZE, cfg.max_time_steps, TEMPERATURE_TOKENS
    )[0]


def dynamic_evaluate(
    model: LanguageModel, ids: Tensor, stats: GradientStatistics, cfg: TrainConfig, temperature: float = 1.0
) -> float:
    """Mean nats/token of a split's token stream [N] read at batch 1 while adapting; restores θ₀.
    Logits are divided by `temperature` both in the score and in the loss each step adapts on."""
    params: list[Tensor] = list(model.parameters())
    theta0 = [p.detach().clone() for p in params]
    data = batchify(ids, EVAL_BATCH_SIZE)
    n = data.shape[0]
    state = model.zero_state(EVAL_BATCH_SIZE)
    total, count = 0.0, 0
    was_training = model.training
    model.eval()
    try:
        for start in range(0, n - 1, cfg.max_time_steps):
            end = min(start + cfg.max_time_steps, n - 1)
            y = data[start + 1 : end + 1]
            features, state = model.features(data[start:end], state)
            ll = token_log_likelihood(model.scores(features).log_probs(temperature), y)
            loss = -ll.sum()
            total += loss.item()
            count += y.numel()
            grads = torch.autograd.grad(loss, params)
            dyneval_update(params, list(grads), theta0, stats, cfg.dyneval_learning_rate)
            state = detach_state(state)
    finally:
        with torch.no_grad():
            torch._foreach_copy_(params, theta0)
        model.train(was_training)
    return total / count


def run_dynamic_evaluation(
    model: LanguageModel,
    train_ids: Tensor,
    splits: dict[str, Tensor],
    cfg: TrainConfig,
    temperature: float | None = None,
) -> dict[str, float]:
    """Statistics from `train_ids`, then the dynamic-evaluation loss of each split (name → nats/token)
    at `temperature`; None estimates it on the split named "valid" (`estimate_temperature`)."""
    if temperature is None:
        temperature = estimate_temperature(model, splits["valid"], cfg)
    stats = gradient_statistics(model, train_ids, cfg)
    return {name: dynamic_evaluate(model, ids, stats, cfg, temperature) for name, ids in splits.items()}
