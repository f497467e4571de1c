"""What a training run ends with: its result (also written as the run folder's `result.json`), or
the error of a run that kept diverging."""

from __future__ import annotations

import math
from dataclasses import dataclass


def perplexity(loss: float) -> float:
    return math.exp(min(loss, 700.0))


def bits_per_char(loss: float) -> float:
    return loss / math.log(2.0)


def headline(loss: float, word_level: bool) -> tuple[str, float]:
    """The figure papers report for this task: ('ppl', perplexity) or ('bpc', bits per character)."""
    return ("ppl", perplexity(loss)) if word_level else ("bpc", bits_per_char(loss))


class TrainingDiverged(RuntimeError):
    """Training kept diverging after `divergence_restores` restores of the best checkpoint (or at once
    with 0). `step`: the step it gave up at, which a tuner records (`diverged_at`) beside the best
    validation loss reached before it."""

    def __init__(self, message: str, step: int | None = None) -> None:
        super().__init__(message)
        self.step = step


class TrainingInfeasible(TrainingDiverged):
    """`divergence: lamb`: the run's gradients (or its validation loss) became NaN or infinite, which
    makes lamb report the trial infeasible with no value (lamb/main.py: the InvalidArgumentError that
    tf.clip_by_global_norm raises on a non-finite norm -> `report_done(infeasible=True)`;
    lamb/monitoring.py `_update_finished_reason`: a NaN validation xe -> the same). A tuner records
    it as infeasible, with no objective value, not as a diverged trial at its best loss."""


@dataclass
class TrainResult:
    best_val_loss: float
    best_step: int | None
    run_dir: str
    best_checkpoint: str | None
    stopped: str
    steps: int
    test_loss: float | None = None
    temperature: float | None = None
    dyneval_val_loss: float | None = None
    dyneval_test_loss: float | None = None
    dyneval_temperature: float | None = None  # estimated as lamb's tune_dyneval.sh does (trainer/dyneval.py)
    test_accuracy: float | None = None
    mc_test_loss: float | None = None
    mc_temperature: float | None = None
    mc_dropout_scale: float | None = None  # the dropout-rate scale MC evaluation used (chosen on validation)
    cuda_path_used: str | None = None
    cuda_path_calls: dict[str, int] | None = None  # training calls per path (trainer/cells/paths.py)
