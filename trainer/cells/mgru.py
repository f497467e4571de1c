"""Multiplicative GRU with a shared intermediate state (Maupomé & Meurs §4.5, eqs. (25)-(27), (5), (18)).

Equation numbers refer to seeds/multiplicative-models-for-recurrent-lm.md. The state is (h,) only.
The state mask scales h_prev where it enters a product (m); the carry (1 - z) ⊙ h_prev keeps the
unmasked state, as variational dropout on GRUs does (Gal & Ghahramani).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import GRUStateCell, State, chrono_update_gate_init_, uniform_init_
from .deferred import DeferredMatmul, zeros_base


class MGRUCell(GRUStateCell):
    """m = (W_x x) ⊙ (W_h ĥ); z, r = σ(U x + V m + b); h̃ = U_h x + V_h (r ⊙ m) + b_h; GRU update.

    Parameters: w_mx [m, n], w_mh [n, n] (eq. 5), w_x [m, 3n] (U_z, U_r, U_h), w_m [n, 2n] (V_z, V_r),
    w_hm [n, n] (V_h), bias [3n] (b_z, b_r, b_h).
    """

    def __init__(self, input_size: int, hidden_size: int, t_max: float = 20.0) -> None:
        super().__init__(input_size, hidden_size)
        n = hidden_size
        self.w_mx = nn.Parameter(torch.empty(input_size, n))
        self.w_mh = nn.Parameter(torch.empty(n, n))
        self.w_x = nn.Parameter(torch.empty(input_size, 3 * n))
        self.w_m = nn.Parameter(torch.empty(n, 2 * n))
        self.w_hm = nn.Parameter(torch.empty(n, n))
        self.bias = nn.Parameter(torch.empty(3 * n))
        uniform_init_(self, input_size + n)
        chrono_update_gate_init_(self.bias[:n], t_max)  # b_z ~ -ln U(1, T_max - 1), see base.py

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        steps, batch, _ = x.shape
        n = self.hidden_size
        (h,) = state
        x2 = x.reshape(-1, self.input_size)
        mx = (x2 @ self.w_mx).view(steps, batch, -1).unbind(0)  # W_x x, hoisted
        gx_zr, gx_h = torch.addmm(self.bias, x2, self.w_x).view(steps, batch, -1).split([2 * n, n], dim=2)
        from_h = DeferredMatmul(self.w_mh, zeros_base(x, steps, batch, n))
        from_m = DeferredMatmul(self.w_m, gx_zr)
        from_rm = DeferredMatmul(self.w_hm, gx_h)
        outs = []
        for t in range(steps):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            m = mx[t] * from_h(t, h_hat)  # eq. (5): m_t = (W_x x_t) ⊙ (W_h h_{t-1})
            z, r = torch.sigmoid(from_m(t, m)).chunk(2, dim=1)  # eqs. (25), (26)
            h_tilde = from_rm(t, r * m)  # eq. (27): h̃ = U_h x + V_h (r ⊙ m)
            h = (1.0 - z) * h + z * torch.tanh(h_tilde)  # eq. (18)
            outs.append(h)
        return torch.stack(outs), (h,)
