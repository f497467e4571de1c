"""The "no zigzag" Mogrifier of the PTB ablation (Mogrifier paper §4.1, Figure 2, Table 3):
`mogrifier_zigzag: false`. The paper's equations, written out here step by step, are the reference:

    x^i = 2σ(Q^i h^0_prev) ⊙ x^{i-2}      for odd i ∈ [1 … r],
    h^i_prev = 2σ(R^i x^{-1}) ⊙ h^{i-2}_prev  for even i ∈ [1 … r],

then the capped LSTM on (x↑, h↑_prev): c = f ⊙ c_prev + min(i, 1 - f) ⊙ j, h = o ⊙ tanh(c).
"""

from __future__ import annotations

import pytest
import torch

from tests.trainer.test_loop import tiny
from trainer import make_config, train
from trainer.cells import make_cell
from trainer.cells.mogrifier import MogrifierLSTMCell, NoZigzagMogrifierLSTMCell

M, N, B = 6, 4, 3


def paper_step(cell: MogrifierLSTMCell, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
    """One step of the no-zigzag equations above, with full-rank gates (z = u Q^T + b)."""
    x_i, h_i = x, h
    for i, gate in enumerate(cell.gates, start=1):
        if i % 2 == 1:
            x_i = 2 * torch.sigmoid(h @ gate.weight + gate.bias) * x_i  # Q^i reads h^0 = h_prev
        else:
            h_i = 2 * torch.sigmoid(x @ gate.weight + gate.bias) * h_i  # R^i reads x^{-1} = x
    g = x_i @ cell.w_x + h_i @ cell.w_h + cell.bias
    gi, gj, gf, go = g.chunk(4, dim=1)
    i, j, f, o = torch.sigmoid(gi), torch.tanh(gj), torch.sigmoid(gf), torch.sigmoid(go)
    c = f * c + torch.minimum(i, 1 - f) * j
    return o * torch.tanh(c), c


def test_the_rounds_read_the_original_inputs_as_the_paper_writes():
    torch.manual_seed(0)
    cell = make_cell("mogrifier_lstm", M, N, mogrifier_rounds=5, mogrifier_rank=0, mogrifier_zigzag=False)
    assert isinstance(cell, NoZigzagMogrifierLSTMCell) and cell.cuda_path == "eager"
    x, h, c = torch.randn(3, B, M), torch.randn(B, N), torch.randn(B, N)
    got, (h_got, c_got) = cell(x, (h, c))
    want = []
    with torch.no_grad():
        for x_t in x:
            h, c = paper_step(cell, x_t, h, c)
            want.append(h)
    torch.testing.assert_close(got, torch.stack(want))
    torch.testing.assert_close((h_got, c_got), (h, c))


def test_it_differs_from_the_zigzag_mogrifier_with_the_same_weights():
    """From round 2 on the zigzag gate reads x^1, the no-zigzag gate x: the outputs part."""
    torch.manual_seed(1)
    zigzag = MogrifierLSTMCell(M, N, rounds=3, rank=0)
    plain = NoZigzagMogrifierLSTMCell(M, N, rounds=3, rank=0)
    plain.load_state_dict(zigzag.state_dict())
    x, state = torch.randn(4, B, M), (torch.randn(B, N), torch.randn(B, N))
    assert not torch.allclose(zigzag(x, state)[0], plain(x, state)[0])
    one_round = NoZigzagMogrifierLSTMCell(M, N, rounds=1, rank=0)
    zig_one = MogrifierLSTMCell(M, N, rounds=1, rank=0)
    zig_one.load_state_dict(one_round.state_dict())  # one round: both gate x by h_prev alike
    torch.testing.assert_close(one_round(x, state)[0], zig_one(x, state)[0])


def test_gradients_flow_to_every_gate():
    cell = NoZigzagMogrifierLSTMCell(M, N, rounds=4, rank=2)
    x, state = torch.randn(3, B, M), (torch.zeros(B, N), torch.zeros(B, N))
    cell(x, state, torch.ones(B, N))[0].sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in cell.parameters())


def test_the_setting_applies_to_the_mogrifier_lstm_only():
    assert make_config({"cell": "mogrifier_lstm", "mogrifier_zigzag": False}).mogrifier_zigzag is False
    with pytest.raises(ValueError, match="no-zigzag"):
        make_config({"cell": "rlstm", "mogrifier_zigzag": False})


def test_a_model_of_no_zigzag_cells_trains(tmp_path):
    cfg = tiny(tmp_path, cell="mogrifier_lstm", mogrifier_zigzag=False, mogrifier_rounds=4, max_steps=10)
    result = train(cfg)
    assert result.steps == 10 and result.best_val_loss < 20
    assert result.cuda_path_calls is not None and set(result.cuda_path_calls) == {"cpu"}
