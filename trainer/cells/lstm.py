"""LSTM with the capped input gate min(i, 1 - f) (thesis §4.1, on by default per §4.6)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import RecurrentCell, State, chrono_init_, uniform_init_


def lstm_step(gx: Tensor, h: Tensor, c: Tensor, w_h: Tensor) -> tuple[Tensor, Tensor]:
    """One LSTM step from the precomputed input part gx = W^x x + b (thesis §4.1 eqs., capped i)."""
    g = gx + h @ w_h
    i, j, f, o = g.chunk(4, dim=-1)
    i, j, f, o = torch.sigmoid(i), torch.tanh(j), torch.sigmoid(f), torch.sigmoid(o)
    c = f * c + torch.minimum(i, 1.0 - f) * j
    h = o * torch.tanh(c)
    return h, c


class LSTMCell(RecurrentCell):
    """i, j, f, o from [x, h_prev]; c = f*c_prev + min(i, 1-f)*j; h = o*tanh(c) (thesis §4.1, §4.6)."""

    def __init__(self, input_size: int, hidden_size: int, t_max: float = 20.0) -> None:
        super().__init__(input_size, hidden_size)
        n = hidden_size
        self.w_x = nn.Parameter(torch.empty(input_size, 4 * n))
        self.w_h = nn.Parameter(torch.empty(n, 4 * n))
        self.bias = nn.Parameter(torch.empty(4 * n))
        uniform_init_(self, input_size + n)
        chrono_init_(self.bias[2 * n : 3 * n], t_max)

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        h, c = state
        gx = torch.addmm(self.bias, x.reshape(-1, self.input_size), self.w_x).view(x.shape[0], x.shape[1], -1)
        outs = []
        for t in range(x.shape[0]):
            if state_mask is not None:
                h = h * state_mask
            h, c = lstm_step(gx[t], h, c, self.w_h)
            outs.append(h)
        return torch.stack(outs), (h, c)
