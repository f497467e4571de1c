"""The training objective: predictions averaged over D dropout samples (thesis §4.3)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def token_log_likelihood(log_probs: Tensor, targets: Tensor) -> Tensor:
    """ln p(w_t | w_<t) for every position: the model's log-probabilities [T, B, V] (its output,
    `OutputScores.log_probs`) at the targets [T, B] → [T, B]."""
    nll = F.nll_loss(log_probs.flatten(0, 1), targets.flatten(), reduction="none")
    return -nll.view_as(targets)


def multi_sample_log_likelihood(log_probs: Tensor, targets: Tensor, samples: int) -> Tensor:
    """ln (1/D Σ_d p(w_t | w_<t, M^d)) (thesis §4.3), computed stably as logsumexp − ln D.

    `log_probs` is [T, D·B, V]: the batch repeated D times (sample-major, as `repeat_for_samples`
    makes it), each copy seeing its own dropout masks; `targets` is [T, B].
    """
    t, db, _ = log_probs.shape
    b = db // samples
    ll = token_log_likelihood(log_probs, targets.repeat(1, samples))  # [T, D·B]
    return torch.logsumexp(ll.view(t, samples, b), dim=1) - math.log(samples)


def repeat_for_samples(tokens: Tensor, samples: int) -> Tensor:
    """[T, B] → [T, D·B]: D copies of the batch, one per dropout sample."""
    return tokens.repeat(1, samples) if samples > 1 else tokens


def training_loss(log_likelihood: Tensor, parameters: list[Tensor], l2_penalty: float) -> Tensor:
    """The papers' loss scale (docs/contracts.md): −Σ_t ln p summed over the BPTT window and averaged
    over the batch, plus l2_penalty · Σ‖w‖²/2 over all parameters.

    The papers do not state the scale; it is that of lamb, their code (Mogrifier paper §3.3), whose
    experiment configs note that "lamb sums the log probabilities over time steps and averages only
    over the examples in the batch".
    """
    loss = -log_likelihood.sum(0).mean()
    if l2_penalty > 0.0:
        loss = loss + 0.5 * l2_penalty * sum(p.pow(2).sum() for p in parameters)
    return loss
