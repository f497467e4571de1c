"""rnntune's shared trainer: recurrent language models trained as the papers train them.

The trainer never imports the tuner, Ray or Optuna: `train(config, report)` is all a tuner sees.

* `config`: `TrainConfig`, every setting; `device`: where a run trains and in what precision.
* `data`: the corpora; `reverse_copy`: the reverse copy task.
* `cells/`: the recurrent cells; `model`: the language model; `mos`: its output layer's scores
  and the Mixture of Softmaxes.
* `objective`, `optim`, `averaging`, `divergence`, `loop`: training; `checkpoint`: checkpoints.
* `evaluate`, `temperature`, `dyneval`, `figures`, `result`: evaluation and what a run ends with;
  `measures`: the model's size (before training) and the run's peak memory.
* `init`: lamb's initial weights and the forget-gate bias; `order`: lamb's training data order.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .checkpoint import load_checkpoint, saved_header
    from .config import MUTABLE_SETTINGS, ConfigError, ScheduleChange, TrainConfig, load_config, make_config
    from .data import DataError
    from .loop import Trainer, train
    from .measures import model_size
    from .result import TrainingDiverged, TrainingInfeasible, TrainResult

# The module each public name lives in, imported on first use: a process that only reads settings
# (a sweep's driver, the API, the CLI) imports `trainer.config` and `trainer.result` without PyTorch.
_HOME = {
    "load_checkpoint": "checkpoint",
    "saved_header": "checkpoint",
    "MUTABLE_SETTINGS": "config",
    "ConfigError": "config",
    "ScheduleChange": "config",
    "TrainConfig": "config",
    "load_config": "config",
    "make_config": "config",
    "DataError": "data",
    "Trainer": "loop",
    "train": "loop",
    "model_size": "measures",
    "TrainingDiverged": "result",
    "TrainingInfeasible": "result",
    "TrainResult": "result",
}

__all__ = [
    "MUTABLE_SETTINGS",
    "ConfigError",
    "DataError",
    "ScheduleChange",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "TrainingDiverged",
    "TrainingInfeasible",
    "load_checkpoint",
    "load_config",
    "make_config",
    "model_size",
    "saved_header",
    "train",
]


def __getattr__(name: str) -> Any:
    """PEP 562: `trainer.NAME` imports the module that holds NAME the first time it is asked for."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value
