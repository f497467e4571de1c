"""The bounds a setting must keep before it trains: its model's size against `num_params<=...`.

Why a module of its own: the sweep driver checks each setting as it is asked (the searcher, so a
refused setting is told to the study at once and never uses up a trial of `n_trials`), and the
trainable checks again where the driver could not size the model (a corpus only the workers
read). Both give the same `Refusal`, which the study is told as an infeasible COMPLETE trial
(docs/sweeps.md, "Bounds known before training").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tuner.objectives.goals import Constraint, Goals

REFUSED = "refused"  # the key of a trainable's result that carries a refusal's reason


@dataclass(frozen=True)
class Refusal:
    """A setting that breaks a bound known before training: its model's size and why."""

    num_params: float
    reason: str

    @property
    def measures(self) -> dict[str, float]:
        """The measures known without training, under their names."""
        return {"num_params": self.num_params}


def refusal(settings: dict[str, Any], bounds: Sequence[str]) -> Refusal | None:
    """The refusal of the trainer `settings` under `bounds` (`num_params<=24e6` ...); None when
    they keep them, or when the model cannot be sized here (a bad config or missing data: the
    trial then trains, or fails saying why, as any other)."""
    if not bounds:
        return None
    from trainer import make_config, model_size

    try:
        size = float(model_size(make_config(settings)))
    except Exception:  # a bad config or missing data: the trainer reports it, as for any trial
        return None
    broken = Goals(constraints=tuple(Constraint.parse(b) for b in bounds)).violated_before_training(
        {"num_params": size}
    )
    return Refusal(size, "; ".join(broken)) if broken else None
