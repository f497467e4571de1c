"""Chrono initialization: b_f ~ ln U(1, T_max - 1) (thesis §4.4)."""

from __future__ import annotations

import math

import pytest
import torch

from trainer import make_config
from trainer.cells import make_cell
from trainer.cells.base import chrono_init_
from trainer.model import LanguageModel

N = 400
FORGET_BIAS = {  # where each cell keeps its forget (update) gate bias
    "lstm": slice(2 * N, 3 * N),
    "mogrifier_lstm": slice(2 * N, 3 * N),
    "rlstm": slice(2 * N, 3 * N),
    "mlstm": slice(2 * N, 3 * N),
    "tmlstm": slice(2 * N, 3 * N),
    "mgru": slice(0, N),
    "tmgru": slice(0, N),
}


def test_chrono_init_range_and_distribution():
    torch.manual_seed(0)
    t_max = math.exp(4.0)
    b = torch.empty(200_000)
    chrono_init_(b, t_max)
    assert b.min() >= 0.0 and b.max() <= math.log(t_max - 1)
    # E[ln U] for U ~ U(1, a) is (a ln a - a + 1) / (a - 1)
    a = t_max - 1
    assert b.mean().item() == pytest.approx((a * math.log(a) - a + 1) / (a - 1), abs=0.01)


@pytest.mark.parametrize("name", sorted(FORGET_BIAS))
@pytest.mark.parametrize("t_max", [math.exp(2.0), math.exp(5.0)])
def test_cells_chrono_initialize_their_forget_gate(name, t_max):
    torch.manual_seed(0)
    cell = make_cell(name, 8, N, t_max=t_max, mogrifier_rounds=2, mogrifier_rank=4, chrono_init=True)
    bias = cell.bias.detach()
    b = bias[FORGET_BIAS[name]]
    if name in {"mgru", "tmgru"}:
        b = -b  # update gate: b_z ~ -ln U(1, T_max - 1), the carry 1 - z plays the forget gate
    assert b.min() >= 0.0 and b.max() <= math.log(t_max - 1)
    assert b.max() - b.min() > 0.5 * math.log(t_max - 1)  # spread over the range, not a constant
    rest = torch.cat([bias[: FORGET_BIAS[name].start], bias[FORGET_BIAS[name].stop :]])
    assert not rest.any()  # every other bias starts at zero


@pytest.mark.parametrize("name", sorted(FORGET_BIAS))
def test_without_chrono_every_bias_starts_at_zero(name):
    """Chrono init only where a recipe names it (thesis §4.4): the default leaves b_f at zero."""
    cell = make_cell(name, 8, N, t_max=math.exp(4.0), mogrifier_rounds=2, mogrifier_rank=4)
    assert not cell.bias.detach().any()


@pytest.mark.parametrize("chrono_init", [False, True])
def test_the_config_setting_reaches_every_layer(chrono_init):
    cfg = make_config({"cell": "rlstm", "mogrifier_rounds": 0, "hidden_size": 16, "chrono_init": chrono_init})
    model = LanguageModel(cfg, vocab_size=11, hidden_size=16)
    for layer in model.layers:
        assert bool(layer.bias.detach()[32:48].any()) == chrono_init


def test_t_max_below_two_is_an_error():
    with pytest.raises(ValueError, match="t_max must be at least 2"):
        make_cell("lstm", 3, 4, t_max=1.5, chrono_init=True)
