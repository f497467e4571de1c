"""The Rewired LSTM keeps |c| <= 1 (thesis §4.1), whatever its weights and inputs."""

from __future__ import annotations

import torch

from trainer.cells.lstm import LSTMCell
from trainer.cells.rlstm import RLSTMCell


def long_run_max_abs_c(cell, steps: int = 400, batch: int = 8, m: int = 6) -> float:
    torch.manual_seed(0)
    with torch.no_grad():
        for p in cell.parameters():
            p.normal_(0.0, 8.0)  # large weights: saturated gates, the regime where c could grow
        x = 10.0 * torch.randn(steps, batch, m, dtype=torch.float64)
        state = tuple(s.double() for s in cell.zero_state(batch, "cpu", torch.float64))
        cell.double()
        mask = torch.full((batch, cell.hidden_size), 2.0, dtype=torch.float64)  # keep-prob 0.5 scaling
        worst = 0.0
        for chunk in x.split(50):
            _, state = cell(chunk, state, mask)
            worst = max(worst, state[1].abs().max().item())
    return worst


def test_rlstm_cell_state_is_bounded_by_one():
    assert long_run_max_abs_c(RLSTMCell(6, 16)) <= 1.0


def test_the_stress_test_reaches_the_bound():
    """The same stress test does move c near the bound, so the bound above is not vacuous."""
    assert long_run_max_abs_c(RLSTMCell(6, 16)) > 0.9
    assert long_run_max_abs_c(LSTMCell(6, 16)) <= 1.0  # the capped LSTM shares the bound


def test_rlstm_with_rounds_is_the_mogrifier_rlstm_sharing_the_rlstm_weights():
    """`cell: rlstm` + mogrifier_rounds > 0 is Circling Back's Mogrifier RLSTM; r = 0 the RLSTM."""
    from trainer.cells import make_cell
    from trainer.cells.rlstm import MogrifierRLSTMCell

    torch.manual_seed(0)
    mog = make_cell("rlstm", 6, 4, mogrifier_rounds=3, mogrifier_rank=2)
    torch.manual_seed(0)
    plain = make_cell("rlstm", 6, 4, mogrifier_rounds=0, mogrifier_rank=2)
    assert isinstance(mog, MogrifierRLSTMCell) and len(mog.gates) == 3
    assert type(plain) is RLSTMCell
    for name, p in plain.named_parameters():  # created first, exactly as RLSTMCell creates them
        assert torch.equal(p, dict(mog.named_parameters())[name]), name
