"""rnntune's shared trainer: recurrent language models trained as the papers train them.

The trainer never imports the tuner, Ray or Optuna: `train(config, report)` is all a tuner sees.
"""

from .checkpoint import load_checkpoint
from .config import ConfigError, TrainConfig, load_config, make_config
from .data import DataError
from .loop import Trainer, train
from .result import TrainingDiverged, TrainResult

__all__ = [
    "ConfigError",
    "DataError",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "TrainingDiverged",
    "load_checkpoint",
    "load_config",
    "make_config",
    "train",
]
