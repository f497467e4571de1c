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

from .checkpoint import load_checkpoint, saved_header
from .config import MUTABLE_SETTINGS, ConfigError, ScheduleChange, TrainConfig, load_config, make_config
from .data import DataError
from .loop import Trainer, train
from .measures import model_size
from .result import TrainingDiverged, TrainingInfeasible, TrainResult

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
