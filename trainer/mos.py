"""The output layer's scores and the Mixture of Softmaxes (Yang et al. 2017, "Breaking the Softmax
Bottleneck", §2.4), which the Mogrifier paper's Wikitext-2 models use with 2 components (Table 1,
"d2, MoS2").

Every consumer of the model's predictions reads log-probabilities from `OutputScores.log_probs`,
so a plain softmax and a mixture are one interface, temperature scaling included.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class OutputScores(NamedTuple):
    """Pre-softmax scores: a plain softmax's logits [T, B, V], or a mixture's per-component logits
    [T, B, K, V] with its prior's logits [T, B, K] (Yang et al. 2017 §2.4)."""

    logits: Tensor
    prior_logits: Tensor | None = None

    def log_probs(self, temperature: float = 1.0) -> Tensor:
        """ln p(w) [T, B, V], normalised in at least float32 even under bf16 autocast.

        Temperature divides every component's logits, not the prior's. A mixture is
        ln Σ_k π_k softmax(logits_k / T), computed as logsumexp_k(ln π_k + log_softmax(logits_k / T)).
        """
        with torch.autocast(self.logits.device.type, enabled=False):
            logits = _at_least_float32(self.logits)
            logp = F.log_softmax(logits / temperature if temperature != 1.0 else logits, dim=-1)
            if self.prior_logits is None:
                return logp
            log_prior = F.log_softmax(_at_least_float32(self.prior_logits), dim=-1)
            return torch.logsumexp(log_prior.unsqueeze(-1) + logp, dim=-2)


def _at_least_float32(x: Tensor) -> Tensor:
    """bfloat16 (autocast's matmuls) up to float32; float32 and float64 as they are."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


class MixtureOfSoftmaxes(nn.Module):
    """K latent contexts c_k = tanh(W_k h + b_k) of the output embedding's size and the prior's
    logits W_π h (Yang et al. 2017 §2.4); the model's output layer turns each context into logits.

    The latent layer maps the hidden size to the embedding size itself, so a mixture needs no
    separate output projection (as Yang et al.'s code maps its last hidden size to the embedding's).
    """

    def __init__(self, hidden_size: int, context_size: int, components: int) -> None:
        super().__init__()
        self.components = components
        self.context_size = context_size
        self.latent = nn.Linear(hidden_size, components * context_size)  # W_k, b_k for all k
        self.prior = nn.Linear(hidden_size, components, bias=False)  # W_π

    def forward(self, h: Tensor, dropout: float = 0.0) -> tuple[Tensor, Tensor]:
        """Contexts [T, B, K, e] and prior logits [T, B, K] for features h [T, B, n].

        `dropout` is the latent dropout's rate: a fresh mask on every context at every time step, as
        the Mogrifier authors' code drops them (lamb/lm.py `to_softmax` with shared_mask_dropout
        False, which their Wikitext-2 configurations set); 0 leaves them undropped.
        """
        contexts = F.dropout(torch.tanh(self.latent(h)), dropout, dropout > 0.0)
        return contexts.unflatten(-1, (self.components, self.context_size)), self.prior(h)
