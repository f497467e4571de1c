"""Multiplicative LSTM: one intermediate state m shared by all gates (Maupomé & Meurs §4.1; Krause et al.).

Equation numbers refer to seeds/multiplicative-models-for-recurrent-lm.md. The paper's text says m
"replace[s] h_{t-1} in all equations", as in Krause et al.'s original mLSTM, so every gate reads x and
m; eqs. (11)-(13) as printed show W h_{t-1} in place of the input term, which contradicts that text
and eqs. (14)-(16). The input gate is not capped here: the paper's cell is the plain LSTM update.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import RecurrentCell, State, chrono_init_, uniform_init_
from .deferred import DeferredMatmul, zeros_base


def lstm_update(g: Tensor, c_prev: Tensor) -> tuple[Tensor, Tensor]:
    """c = f ⊙ c_prev + i ⊙ tanh(ĥ), h = o ⊙ tanh(c) from g = [i, ĥ, f, o] (eqs. (6)-(7))."""
    gi, gj, gf, go = g.chunk(4, dim=1)
    c = torch.sigmoid(gf) * c_prev + torch.sigmoid(gi) * torch.tanh(gj)  # eq. (6)
    h = torch.sigmoid(go) * torch.tanh(c)  # eq. (7), with tanh as in Krause et al. and thesis §4.1
    return h, c


class MLSTMCell(RecurrentCell):
    """m = (W_mx x) ⊙ (W_mh ĥ_prev) (eq. 5); i, ĥ, f, o = U x + V m + b (eqs. 4, 11-13); LSTM update.

    Parameters: w_mx [m, n], w_mh [n, n] (the factors of eq. 5), w_x [m, 4n] (U), w_m [n, 4n] (V),
    bias [4n]; gate blocks in the order i, ĥ (the candidate, "j"), f, o.
    """

    def __init__(self, input_size: int, hidden_size: int, t_max: float = 20.0) -> None:
        super().__init__(input_size, hidden_size)
        n = hidden_size
        self.w_mx = nn.Parameter(torch.empty(input_size, n))
        self.w_mh = nn.Parameter(torch.empty(n, n))
        self.w_x = nn.Parameter(torch.empty(input_size, 4 * n))
        self.w_m = nn.Parameter(torch.empty(n, 4 * n))
        self.bias = nn.Parameter(torch.empty(4 * n))
        uniform_init_(self, input_size + n)
        chrono_init_(self.bias[2 * n : 3 * n], t_max)  # b^f ~ ln U(1, T_max - 1) (thesis §4.4)

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        steps, batch, _ = x.shape
        h, c = state
        x2 = x.reshape(-1, self.input_size)
        mx = (x2 @ self.w_mx).view(steps, batch, -1).unbind(0)  # W_mx x, hoisted
        gx = torch.addmm(self.bias, x2, self.w_x).view(steps, batch, -1)  # U x + b, hoisted
        from_h = DeferredMatmul(self.w_mh, zeros_base(x, steps, batch, self.hidden_size))
        from_m = DeferredMatmul(self.w_m, gx)
        outs = []
        for t in range(steps):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            m = mx[t] * from_h(t, h_hat)  # eq. (5): m_t = (W_x x_t) ⊙ (W_h h_{t-1})
            h, c = lstm_update(from_m(t, m), c)
            outs.append(h)
        return torch.stack(outs), (h, c)
