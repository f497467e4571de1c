"""True multiplicative LSTM: a separate intermediate state per gate (Maupomé & Meurs §4.2, eqs. (14)-(17)).

Equation numbers refer to seeds/multiplicative-models-for-recurrent-lm.md. The candidate ĥ is
factorized like the gates ("factorize every would-be W tensor separately", §4.2). Eqs. (14)-(17)
have no typo, so the printed and corrected forms are the same cell: the output is eq. (7)'s
h = o ⊙ σ(c) and each m_* has the input's size (§5.1); by default h = o ⊙ tanh(c) and m_* has the
hidden size. See mlstm.py.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import RecurrentCell, State, chrono_init_, uniform_init_
from .deferred import DeferredMatmul, zeros_base
from .mlstm import intermediate_size, lstm_update


class TMLSTMCell(RecurrentCell):
    """m_* = (W_*x x) ⊙ (W_*h ĥ_prev) (eq. 17); * = σ(U_* x + V_* m_* + b_*) (eqs. 14-16); LSTM update.

    Parameters, with k the intermediate size: w_mx [m, 4k] and w_mh [n, 4k] (the factors W_*x,
    W_*h side by side), w_x [m, 4n] (U_*), w_m [4, k, n] (one V_* per gate), bias [4n]; gates in
    the order i, ĥ, f, o. `t_max` Chrono-initializes b^f (thesis §4.4); None leaves it at 0.
    """

    def __init__(
        self, input_size: int, hidden_size: int, t_max: float | None = None, form: str = "default"
    ) -> None:
        super().__init__(input_size, hidden_size)
        n, k = hidden_size, intermediate_size(form, input_size, hidden_size)
        self.form, self.intermediate = form, k
        self.w_mx = nn.Parameter(torch.empty(input_size, 4 * k))
        self.w_mh = nn.Parameter(torch.empty(n, 4 * k))
        self.w_x = nn.Parameter(torch.empty(input_size, 4 * n))
        self.w_m = nn.Parameter(torch.empty(4, k, n))
        self.bias = nn.Parameter(torch.empty(4 * n))
        uniform_init_(self, input_size + n)
        if t_max is not None:
            chrono_init_(self.bias[2 * n : 3 * n], t_max)  # b^f ~ ln U(1, T_max - 1) (thesis §4.4)

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        steps, batch, _ = x.shape
        n = self.hidden_size
        h, c = state
        x2 = x.reshape(-1, self.input_size)
        mx = (x2 @ self.w_mx).view(steps, batch, -1).unbind(0)  # W_*x x for all four gates, hoisted
        gx = torch.addmm(self.bias, x2, self.w_x).view(steps, batch, -1).split(n, dim=2)  # U_* x + b_*
        size = self.intermediate
        from_h = DeferredMatmul(self.w_mh, zeros_base(x, steps, batch, 4 * size))
        from_m = [DeferredMatmul(self.w_m[k], gx[k]) for k in range(4)]
        outs = []
        for t in range(steps):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            m = (mx[t] * from_h(t, h_hat)).split(size, dim=1)  # eq. (17), one m_* per gate
            g = torch.cat([from_m[k](t, m[k]) for k in range(4)], dim=1)  # eqs. (14)-(16)
            h, c = lstm_update(g, c, self.form)
            outs.append(h)
        return torch.stack(outs), (h, c)
