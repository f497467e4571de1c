"""The settings the spaces take from the authors' released code and from the papers' own procedure
(issue 46): each read from the space file and checked against what the trainer then does."""

from __future__ import annotations

import math

import pytest
import torch

from tests.trainer.corpora import write_ptb
from trainer import Trainer, make_config, train
from trainer.model import LanguageModel
from tuner.space import BUILTIN_SPACES_DIR, load_space

# The Mogrifier-paper spaces whose input_embedding_ratio is tuned (all but Enwik8, Appendix A).
RATIO_TUNED = (
    "mogrifier_paper_ptb_lstm",
    "mogrifier_paper_ptb_mogrifier_lstm",
    "mogrifier_paper_wt2_lstm",
    "mogrifier_paper_wt2_mogrifier_lstm",
    "mogrifier_paper_ptb_char_mogrifier_lstm",
    "mogrifier_paper_mwc_mogrifier_lstm",
)
MOGRIFIER_PAPER = (*RATIO_TUNED, "mogrifier_paper_enwik8_lstm", "mogrifier_paper_enwik8_mogrifier_lstm")
CIRCLING_BACK = (
    "circling_back_ptb_lstm",
    "circling_back_ptb_rlstm",
    "circling_back_ptb_mogrifier_lstm",
    "circling_back_ptb_mogrifier_rlstm",
    "circling_back_wt2_mogrifier_rlstm",
    "circling_back_ptb_char_mogrifier_rlstm",
    "circling_back_enwik8_mogrifier_rlstm",
    "circling_back_text8_mogrifier_rlstm",
)
# A model small enough to build in a test; everything else is the space's.
SMALL = {"num_params": None, "hidden_size": 16, "num_layers": 2, "data_dir": "data"}


def space_model(name: str, **settings) -> LanguageModel:
    cfg = make_config({**load_space(name).fixed, **SMALL, **settings})
    torch.manual_seed(0)
    return LanguageModel(cfg, vocab_size=11, hidden_size=16)


@pytest.mark.parametrize("name", RATIO_TUNED)
def test_a_ratio_below_one_drops_the_projected_outputs_again(name):
    """lamb/lm.py: with input_embedding_ratio < 1, output_dropout applies again after the
    down-projection, a fresh mask per step (downprojected_output_dropout -1, shared_mask_dropout False)."""
    assert "downprojected_output_dropout: null" in (BUILTIN_SPACES_DIR / f"{name}.yaml").read_text()
    # One softmax, so that the projection exists (a mixture's latent layer projects itself, below).
    model = space_model(name, input_embedding_ratio=0.5, output_dropout=0.5, mos_components=1).train()
    assert model.projection is not None
    projected: list[torch.Tensor] = []
    model.projection.register_forward_hook(lambda mod, args, out: projected.append(out))
    torch.manual_seed(1)
    out, _ = model.features(torch.randint(0, 11, (6, 4)), model.zero_state(4))
    dropped = out == 0
    assert dropped.any() and not (projected[-1] == 0).any()
    assert not all(torch.equal(dropped[0], dropped[t]) for t in range(1, 6))


@pytest.mark.parametrize("name", ["mogrifier_paper_wt2_lstm", "mogrifier_paper_wt2_mogrifier_lstm"])
def test_the_mixtures_latent_mask_changes_between_steps(name):
    """lamb's Wikitext-2 MoS configs: the latent contexts take output_dropout, a fresh mask each step."""
    model = space_model(name, input_embedding_ratio=0.5, output_dropout=0.5).train()
    assert model.mos is not None and model.projection is None  # the latent layer projects itself
    contexts: list[torch.Tensor] = []
    model.mos.register_forward_hook(lambda mod, args, out: contexts.append(out[0]))
    torch.manual_seed(2)
    model.scores(torch.randn(1, 4, 16).expand(6, 4, 16))  # the same features at every step
    zero = contexts[-1] == 0
    assert zero.any() and not all(torch.equal(zero[0], zero[t]) for t in range(1, 6))


@pytest.mark.parametrize("name", MOGRIFIER_PAPER)
def test_carried_states_are_dropped_as_every_lamb_config_does(name, tmp_path):
    """drop_state_probability 0.01 (every published lamb config): over 50 steps of 64 sequences the
    trainer restarts some sequence from the zero state."""
    fixed = load_space(name).fixed
    assert fixed["drop_state_probability"] == 0.01
    cfg = make_config(
        {
            **fixed,
            **SMALL,
            "dataset": "ptb",
            "data_dir": str(write_ptb(tmp_path / "data")),
            "mos_components": 1,
            "batch_size": 64,
            "bptt": 5,
            "run_dir": str(tmp_path / "run"),
        }
    )
    trainer = Trainer(cfg)
    zeroed = []
    trainer.model.layers[0].register_forward_pre_hook(
        lambda mod, args: zeroed.append(int((args[1][0] == 0).all(dim=1).sum()))
    )
    for _ in range(50):
        trainer.train_step()
    assert zeroed[0] == 64 and sum(zeroed[1:]) > 0  # the first window starts from zeros anyway


def test_ptb_char_trains_as_long_as_lambs_run():
    """Circling Back §8 trained "only ... half the epochs" of the baseline; lamb's tune_ptb_char.sh
    trains 500 turns of 200 steps of 64 x 150 characters. The space: the same characters at batch
    128, one evaluation per lamb turn, the switch's patience lamb's 25 turns."""
    cfg = make_config({**load_space("mogrifier_paper_ptb_char_mogrifier_lstm").fixed, "data_dir": "d"})
    assert cfg.max_steps * cfg.batch_size * cfg.bptt == 500 * 200 * 64 * 150
    assert cfg.eval_every * cfg.batch_size == 200 * 64 and cfg.averaging_patience == 25
    assert 180 < cfg.max_steps / 265 < 200  # about 190 epochs of about 265 windows


def test_mwc_names_the_file_variant_lamb_read():
    text = (BUILTIN_SPACES_DIR / "mogrifier_paper_mwc_mogrifier_lstm.yaml").read_text()
    assert "wiki_{lang}.{tr,va,te}.raw.unk" in text and "tune_mwc.sh" in text


@pytest.mark.parametrize("name", CIRCLING_BACK)
def test_2ta_evaluates_about_every_thousand_steps(name):
    """Thesis §3.6 evaluated 2TA every 1,000 steps: each Circling Back space uses the period nearest
    1,000 that divides its run, so the last step is evaluated."""
    cfg = make_config({**load_space(name).fixed, "data_dir": "d"})
    divisors = [e for e in range(1, cfg.max_steps + 1) if cfg.max_steps % e == 0]
    assert cfg.eval_every == min(divisors, key=lambda e: abs(e - 1000))
    assert "§3.6" in (BUILTIN_SPACES_DIR / f"{name}.yaml").read_text()


@pytest.mark.parametrize("name", ["maupome_meurs_ptb_char", "maupome_meurs_text8"])
def test_maupome_meurs_test_loss_has_no_tuned_temperature(name, tmp_path):
    """The paper tunes no softmax temperature: the space's run reports its test loss at 1."""
    space = load_space(name)
    settings = {
        **space.fixed,
        **SMALL,
        "cell": "mgru",
        "num_layers": 1,
        "dataset": "ptb",
        "data_dir": str(write_ptb(tmp_path / "data", train=300, valid=40, test=40)),
        "batch_size": 4,
        "bptt": 10,
        "max_steps": 2,
        "eval_every": 2,
        "run_dir": str(tmp_path / "run"),
    }
    result = train(make_config(settings))
    assert result.temperature == 1.0 and result.test_loss is not None and math.isfinite(result.test_loss)
