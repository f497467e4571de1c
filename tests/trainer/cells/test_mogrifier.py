"""Mogrifier LSTM specifics: r = 0 is the LSTM; parameter counts of full- and low-rank gates."""

from __future__ import annotations

import pytest
import torch

from trainer.cells import make_cell
from trainer.cells.lstm import LSTMCell
from trainer.cells.mogrifier import MogrifierLSTMCell

M, N = 7, 5


def test_zero_rounds_is_the_lstm_with_the_same_seed():
    torch.manual_seed(4)
    lstm = LSTMCell(M, N, t_max=30.0)
    torch.manual_seed(4)
    mog = make_cell(
        "mogrifier_lstm", M, N, t_max=30.0, mogrifier_rounds=0, mogrifier_rank=3, chrono_init=True
    )
    assert list(mog.state_dict()) == list(lstm.state_dict())
    x, state = torch.randn(9, 2, M), (torch.randn(2, N), torch.randn(2, N))
    mask = torch.rand(2, N) * 2
    torch.testing.assert_close(mog(x, state, mask)[0], lstm(x, state, mask)[0], rtol=0, atol=0)


def test_zero_rounds_with_copied_lstm_weights_is_the_lstm():
    lstm = LSTMCell(M, N)
    mog = MogrifierLSTMCell(M, N, rounds=0, rank=0)
    mog.load_state_dict(lstm.state_dict())
    x, state = torch.randn(9, 2, M), (torch.randn(2, N), torch.randn(2, N))
    got, (_h, c) = mog(x, state)
    want, (_h_want, c_want) = lstm(x, state)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(c, c_want, rtol=0, atol=0)


def test_mogrifying_changes_the_lstm():
    torch.manual_seed(4)
    lstm = LSTMCell(M, N)
    torch.manual_seed(4)
    mog = MogrifierLSTMCell(M, N, rounds=2, rank=0)
    x, state = torch.randn(3, 2, M), (torch.randn(2, N), torch.randn(2, N))
    assert not torch.allclose(mog(x, state)[0], lstm(x, state)[0])


def lstm_params(m: int, n: int) -> int:
    return m * 4 * n + n * 4 * n + 4 * n


@pytest.mark.parametrize("rounds", [0, 1, 2, 5, 6])
@pytest.mark.parametrize("rank", [-20, 0, 1, 3])
def test_parameter_count(rounds, rank):
    """Odd rounds Q^i: h (n) → x (m); even rounds R^i: x (m) → h (n); each with its own bias."""
    cell = make_cell("mogrifier_lstm", M, N, mogrifier_rounds=rounds, mogrifier_rank=rank)
    n_q, n_r = (rounds + 1) // 2, rounds // 2
    if rank > 0:  # Q = Q_left [m×k] · Q_right [k×n], R = R_left [n×k] · R_right [k×m]
        per_q, per_r = rank * (N + M) + M, rank * (M + N) + N
    else:
        per_q, per_r = M * N + M, N * M + N
    expected = lstm_params(M, N) + n_q * per_q + n_r * per_r
    assert sum(p.numel() for p in cell.parameters()) == expected


def test_rank_and_rounds_reach_only_the_mogrifier():
    assert isinstance(make_cell("lstm", M, N, mogrifier_rounds=5, mogrifier_rank=3), LSTMCell)
    plain = make_cell("lstm", M, N, mogrifier_rounds=5)
    assert sum(p.numel() for p in plain.parameters()) == lstm_params(M, N)
    with pytest.raises(ValueError, match="mogrifier_rounds"):
        MogrifierLSTMCell(M, N, rounds=-1)
