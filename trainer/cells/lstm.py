"""LSTM with the capped input gate min(i, 1 - f) (thesis §4.1; on by default in the papers, §4.6)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import RecurrentCell, State, chrono_init_, uniform_init_
from .deferred import DeferredMatmul
from .fusion import fused


@fused
def lstm_pointwise(g: Tensor, c_prev: Tensor) -> tuple[Tensor, Tensor]:
    """The LSTM's elementwise part from the gate pre-activations g = [i, j, f, o] (thesis §4.1)."""
    gi, gj, gf, go = g.chunk(4, dim=1)
    i = torch.sigmoid(gi)  # thesis §4.1: i = σ(W^ix x + W^ih h_prev + b^i)
    j = torch.tanh(gj)  # j = tanh(W^jx x + W^jh h_prev + b^j)
    f = torch.sigmoid(gf)  # f = σ(W^fx x + W^fh h_prev + b^f)
    o = torch.sigmoid(go)  # o = σ(W^ox x + W^oh h_prev + b^o)
    c = f * c_prev + torch.minimum(i, 1.0 - f) * j  # capped input gate (thesis §4.1, §4.6)
    h = o * torch.tanh(c)  # h = o ⊙ tanh(c)
    return h, c


class LSTMCell(RecurrentCell):
    """i, j, f, o from [x, h_prev]; c = f⊙c_prev + min(i, 1-f)⊙j; h = o⊙tanh(c) (thesis §4.1, §4.6).

    Parameters: w_x [m, 4n], w_h [n, 4n], bias [4n], gate blocks in the order i, j, f, o. The input
    projection of the whole window is one GEMM before the time loop; the loop runs the recurrent
    GEMM and the fused elementwise step; dL/dw_h is one GEMM per window (see deferred.py).
    """

    def __init__(self, input_size: int, hidden_size: int, t_max: float = 20.0) -> None:
        super().__init__(input_size, hidden_size)
        n = hidden_size
        self.w_x = nn.Parameter(torch.empty(input_size, 4 * n))
        self.w_h = nn.Parameter(torch.empty(n, 4 * n))
        self.bias = nn.Parameter(torch.empty(4 * n))
        uniform_init_(self, input_size + n)
        chrono_init_(self.bias[2 * n : 3 * n], t_max)  # b^f ~ ln U(1, T_max - 1) (thesis §4.4)

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        steps, batch, _ = x.shape
        h, c = state
        gx = torch.addmm(self.bias, x.reshape(-1, self.input_size), self.w_x).view(steps, batch, -1)
        recurrent = DeferredMatmul(self.w_h, gx)
        outs = []
        for t in range(steps):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            h, c = lstm_pointwise(recurrent(t, h_hat), c)
            outs.append(h)
        return torch.stack(outs), (h, c)
