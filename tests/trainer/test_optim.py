"""The optimizer gets the configured β1 (thesis §4.4/§4.6: RAdam, else the baseline's Adam β1 = 0)."""

from __future__ import annotations

import pytest
import torch

from trainer.config import ConfigError, make_config
from trainer.optim import ADAM_BETA2, make_optimizer


def params():
    return [torch.nn.Parameter(torch.randn(3, 2))]


def test_radam_defaults_to_the_baselines_beta1_zero():
    cfg = make_config()
    opt = make_optimizer(cfg, params())
    assert isinstance(opt, torch.optim.RAdam)
    assert opt.param_groups[0]["betas"] == (0.0, ADAM_BETA2)
    assert cfg.to_dict()["adam_beta1"] == 0.0  # saved with the config (config.yaml, checkpoints)


@pytest.mark.parametrize("optimizer, cls", [("radam", torch.optim.RAdam), ("adam", torch.optim.Adam)])
def test_configured_betas_and_learning_rate_reach_the_optimizer(optimizer, cls):
    cfg = make_config({"optimizer": optimizer, "adam_beta1": 0.9, "learning_rate": 0.002})
    opt = make_optimizer(cfg, params())
    assert type(opt) is cls
    assert opt.param_groups[0]["betas"] == (0.9, ADAM_BETA2)
    assert opt.param_groups[0]["lr"] == 0.002


def test_legacy_adam_beta1_0_reads_as_adam_with_beta1_zero():
    cfg = make_config({"optimizer": "adam_beta1_0"})
    assert cfg.optimizer == "adam" and cfg.adam_beta1 == 0.0
    with pytest.raises(ConfigError, match="adam_beta1"):
        make_config({"optimizer": "adam_beta1_0", "adam_beta1": 0.9})


def test_beta1_out_of_range_names_the_field():
    with pytest.raises(ConfigError, match="adam_beta1"):
        make_config({"adam_beta1": 1.0})
