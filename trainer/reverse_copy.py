"""The reverse copy task (Mogrifier paper §4.3): read a sequence, then after a marker repeat it reversed.

Examples are `reverse_copy_length` tokens drawn uniformly from `reverse_copy_vocab` symbols
(paper: 1000). The encoder–decoder (trainer.model.ReverseCopyModel) is trained without dropout,
with the loss on the reversed half only: −Σ_t ln p(y_t | x, y_<t) over the L reversed tokens,
averaged over the batch (the papers' loss scale). Validation and test sets hold 10,000 examples
each, as in the paper; training examples are drawn afresh for every step from a generator seeded
by (seed, step), the paper's distribution without holding its 500,000 examples in memory (§4.3:
"overfitting is not an issue here"), and a resumed run sees the same batches.

Sequence accuracy is the fraction of examples whose every reversed token is the decoder's argmax.
With teacher forcing this equals greedy decoding's accuracy: a sequence whose teacher-forced
argmaxes are all right decodes greedily from exactly the same inputs, and one that has a wrong
argmax first goes wrong at that same position under greedy decoding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from .config import TrainConfig
from .objective import token_log_likelihood

if TYPE_CHECKING:
    from .model import ReverseCopyModel

# Validation and test set sizes (Mogrifier paper §4.3).
EVAL_EXAMPLES = 10_000
# Generator streams: validation, test, then training step s uses TRAIN_STREAM + s.
VALID_STREAM, TEST_STREAM, TRAIN_STREAM = 0, 1, 2
MARKER = "<rev>"


def vocabulary(cfg: TrainConfig) -> list[str]:
    """The symbols 0 … V-1, then the marker the decoder reads first."""
    return [str(i) for i in range(cfg.reverse_copy_vocab)] + [MARKER]


def examples(cfg: TrainConfig, count: int, stream: int) -> Tensor:
    """`count` source sequences [count, L] from the generator of (seed, stream)."""
    gen = torch.Generator().manual_seed(hash((cfg.seed, stream)) & 0x7FFF_FFFF_FFFF)
    return torch.randint(0, cfg.reverse_copy_vocab, (count, cfg.reverse_copy_length), generator=gen)


def train_batch(cfg: TrainConfig, step: int) -> Tensor:
    """The training batch [B, L] of optimizer step `step` (fresh examples, reproducible on resume)."""
    return examples(cfg, cfg.batch_size, TRAIN_STREAM + step)


def split_examples(cfg: TrainConfig) -> dict[str, Tensor]:
    """The fixed validation and test sets, EVAL_EXAMPLES each."""
    return {
        "valid": examples(cfg, EVAL_EXAMPLES, VALID_STREAM),
        "test": examples(cfg, EVAL_EXAMPLES, TEST_STREAM),
    }


def logits_and_targets(model: ReverseCopyModel, source: Tensor) -> tuple[Tensor, Tensor]:
    """Decoder ln p [L, B, V] (normalised logits) and the reversed targets [L, B] for source
    sequences [B, L]."""
    marker = model.vocab_size - 1
    src = source.t()  # time-major [L, B]
    target = src.flip(0)  # y = x reversed
    start = torch.full_like(target[:1], marker)
    decoder_input = torch.cat([start, target[:-1]])  # marker, then y_<t (teacher forcing)
    return model(src, decoder_input), target


def log_likelihood(model: ReverseCopyModel, source: Tensor) -> Tensor:
    """ln p(y_t | x, y_<t) for the reversed half only [L, B]; the source half carries no loss."""
    log_probs, target = logits_and_targets(model, source)
    return token_log_likelihood(log_probs, target)


@torch.no_grad()
def evaluate_examples(
    model: ReverseCopyModel, source: Tensor, batch_size: int, max_tokens: int | None = None
) -> tuple[float, float]:
    """(mean nats per reversed token, sequence accuracy) over source sequences [N, L]."""
    was_training = model.training
    model.eval()
    if max_tokens is not None:
        source = source[: max(1, max_tokens // source.shape[1])]
    total, correct = 0.0, 0
    try:
        for batch in source.split(batch_size):
            log_probs, target = logits_and_targets(model, batch)
            total -= token_log_likelihood(log_probs, target).sum().item()
            correct += int((log_probs.argmax(-1) == target).all(0).sum().item())
    finally:
        model.train(was_training)
    n = source.shape[0]
    return total / (n * source.shape[1]), correct / n
