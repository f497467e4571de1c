"""The optimizer: RAdam (thesis §4.4) or Adam, with β1 from the config.

Thesis §4.6 (Circling Back §7): "everything else is the same as in the baseline", and the
baseline (Mogrifier paper §3.3) runs Adam with β1 = 0, "a setting that resembles RMSProp without
momentum". §4.4 changes only the optimizer to RAdam, so RAdam keeps β1 = 0 by default
(`adam_beta1`); β2 is PyTorch's 0.999, which neither paper changes.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .config import TrainConfig

ADAM_BETA2 = 0.999


def make_optimizer(cfg: TrainConfig, params: list[Tensor]) -> torch.optim.Optimizer:
    """torch.optim.RAdam or Adam over `params` at `cfg.learning_rate`, betas (adam_beta1, 0.999)."""
    betas = (cfg.adam_beta1, ADAM_BETA2)
    opt_cls = torch.optim.RAdam if cfg.optimizer == "radam" else torch.optim.Adam
    return opt_cls(params, lr=cfg.learning_rate, betas=betas)
