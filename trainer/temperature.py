"""lamb's softmax-temperature search, the one implementation validation, the test figures and dynamic
evaluation share.

Every lamb tuning configuration of the Mogrifier paper's models sets `eval_softmax_temperature=-0.8`
and `eval_softmax_temperature_estimation_num_tokens=50000`
(lamb/experiment/mogrifier/config/*/trial_*/config); a negative value makes lamb/evaluation.py's
`evaluate_all` search the temperature at every evaluation before it scores the validation split:

    quick_eval_max_batches = max(1, eval_softmax_temperature_estimation_num_tokens
                                    // batch_size // max_time_steps)
    for i in range(50):
      eval_softmax_temperature0 = 1.06-i*0.02
      if eval_softmax_temperature0 < -config_sttt-0.0001: break
      xe0 = evaluate(... quick eval iterator ..., temperature=eval_softmax_temperature0)
      if xe0 < xe: best_i = i; xe = xe0; eval_softmax_temperature = eval_softmax_temperature0
      if best_i+1 < i: break

A linear scan, not a golden-section search: the logit multipliers 1.06, 1.04, … down to 0.8, each
scored (dropout off) on the first windows of the validation split read in `batch_size` streams, the
first strict improvement kept, stopped once the best lies two candidates back. lamb's model
multiplies the logits by the value (lamb/lm.py `softmax_temperature`), so the trainer's temperature,
which divides them, is its reciprocal. One pass here scores every candidate at once; the stopping
rule is then applied to the losses in lamb's order, which picks what the one-by-one scan picks.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from .data import batchify
from .evaluate import evaluate
from .model import LanguageModel

# lamb/evaluation.py `evaluate_all`: 1.06 - 0.02 i while not below -eval_softmax_temperature (0.8).
LOGIT_MULTIPLIERS = tuple(round(1.06 - 0.02 * i, 2) for i in range(14))  # 1.06 … 0.80
# The search stops when the best multiplier is this many candidates back (`best_i+1 < i`).
TEMPERATURE_PATIENCE = 2
# eval_softmax_temperature_estimation_num_tokens of every lamb tuning configuration.
TEMPERATURE_TOKENS = 50_000


def lamb_choice(losses: Sequence[float]) -> int:
    """The index lamb's scan settles on, given every candidate's loss in LOGIT_MULTIPLIERS' order:
    the first strict minimum among the candidates it reaches before stopping."""
    best = 0
    for i, loss in enumerate(losses):
        if best + TEMPERATURE_PATIENCE < i:
            break  # lamb stopped after candidate i - 1: later candidates are never scored
        if loss < losses[best]:
            best = i
    return best


def search_tokens(max_eval_tokens: int | None) -> int:
    """The validation tokens the per-evaluation search reads: lamb's TEMPERATURE_TOKENS, or fewer
    where `max_eval_tokens` caps every evaluation (a quick run asks for quick evaluations)."""
    return TEMPERATURE_TOKENS if max_eval_tokens is None else min(TEMPERATURE_TOKENS, max_eval_tokens)


def search_temperature(
    model: LanguageModel, valid_ids: Tensor, batch_size: int, window: int, tokens: int = TEMPERATURE_TOKENS
) -> tuple[float, float]:
    """(temperature, its loss in nats/token) lamb's search picks: the first max(1, tokens //
    batch_size // window) windows of `window` tokens of the validation stream `valid_ids` [N] cut
    into `batch_size` streams (as many as leave each one window where the split is short), each
    stream's state carried from window to window from zero, dropout off."""
    batch = max(1, min(batch_size, valid_ids.numel() // (window + 1)))
    windows = max(1, tokens // batch // window)
    data = batchify(valid_ids, batch)[: windows * window + 1]
    temperatures = [1.0 / m for m in LOGIT_MULTIPLIERS]
    losses = evaluate(model, data, window, temperatures)  # one pass scores every candidate
    best = lamb_choice(losses)
    return temperatures[best], losses[best]
