"""Evaluation with deterministic dropout, softmax temperature chosen on validation data (thesis §4.6).

Losses are mean cross-entropy in nats per token; `perplexity` and `bits_per_char` convert them
to what word- and character-level papers report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from .model import LanguageModel, detach_state
from .objective import token_log_likelihood

# Temperatures tried when choosing the softmax temperature on validation data.
TEMPERATURE_GRID = tuple(round(0.70 + 0.05 * i, 2) for i in range(13))  # 0.70 … 1.30


@torch.no_grad()
def evaluate(
    model: LanguageModel,
    data: Tensor,
    bptt: int,
    temperatures: Sequence[float] = (1.0,),
    max_tokens: int | None = None,
) -> list[float]:
    """Mean nats/token on a batchified split [N, B], one loss per temperature (dropout off)."""
    was_training = model.training
    model.eval()
    try:
        n, batch = data.shape
        if max_tokens is not None:
            n = min(n, max(2, max_tokens // batch + 1))
        state = model.zero_state(batch)
        totals = [0.0] * len(temperatures)
        count = 0
        for start in range(0, n - 1, bptt):
            end = min(start + bptt, n - 1)
            x = data[start:end]
            y = data[start + 1 : end + 1]
            logits, state = model(x, state)
            for k, temp in enumerate(temperatures):
                totals[k] -= token_log_likelihood(logits, y, temp).sum().item()
            count += y.numel()
            state = detach_state(state)
        return [t / count for t in totals]
    finally:
        model.train(was_training)


def select_temperature(model: LanguageModel, valid: Tensor, bptt: int) -> tuple[float, float]:
    """The softmax temperature that minimizes validation loss, and that loss (Melis et al. 2018)."""
    losses = evaluate(model, valid, bptt, TEMPERATURE_GRID)
    best = min(range(len(losses)), key=losses.__getitem__)
    return TEMPERATURE_GRID[best], losses[best]


def perplexity(loss: float) -> float:
    return math.exp(min(loss, 700.0))


def bits_per_char(loss: float) -> float:
    return loss / math.log(2.0)


def headline(loss: float, word_level: bool) -> tuple[str, float]:
    """The figure papers report for this task: ('ppl', perplexity) or ('bpc', bits per character)."""
    return ("ppl", perplexity(loss)) if word_level else ("bpc", bits_per_char(loss))
