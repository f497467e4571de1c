"""Multiplicative GRU with a shared intermediate state (Maupomé & Meurs §4.5, eqs. (25)-(27), (5), (18)).

Equation numbers refer to seeds/multiplicative-models-for-recurrent-lm.md. The state is (h,) only.
The state mask scales h_prev where it enters a product (m); the carry (1 - z) ⊙ h_prev keeps the
unmasked state, as variational dropout on GRUs does (Gal & Ghahramani). Eqs. (25)-(27) have no
typo, so the printed and corrected forms are the same cell: m has the input's size (§5.1), and so
has the reset gate r, which filters m in eq. (27); by default both have the hidden size. See mlstm.py.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import GRUStateCell, State, chrono_update_gate_init_, uniform_init_
from .deferred import DeferredMatmul, zeros_base
from .mlstm import intermediate_size


class MGRUCell(GRUStateCell):
    """m = (W_x x) ⊙ (W_h ĥ); z, r = σ(U x + V m + b); h̃ = U_h x + V_h (r ⊙ m) + b_h; GRU update.

    Parameters, with k the intermediate size (the size of m and r): w_mx [m, k], w_mh [n, k]
    (eq. 5), w_x [m, 2n + k] (U_z, U_r, U_h), w_m [k, n + k] (V_z, V_r), w_hm [k, n] (V_h),
    bias [2n + k] (b_z, b_r, b_h). `t_max` Chrono-initializes b_z (see base.py); None leaves it at 0.
    """

    def __init__(
        self, input_size: int, hidden_size: int, t_max: float | None = None, form: str = "default"
    ) -> None:
        super().__init__(input_size, hidden_size)
        n, k = hidden_size, intermediate_size(form, input_size, hidden_size)
        self.intermediate = k
        self.w_mx = nn.Parameter(torch.empty(input_size, k))
        self.w_mh = nn.Parameter(torch.empty(n, k))
        self.w_x = nn.Parameter(torch.empty(input_size, 2 * n + k))
        self.w_m = nn.Parameter(torch.empty(k, n + k))
        self.w_hm = nn.Parameter(torch.empty(k, n))
        self.bias = nn.Parameter(torch.empty(2 * n + k))
        uniform_init_(self, input_size + n)
        if t_max is not None:
            chrono_update_gate_init_(self.bias[:n], t_max)  # b_z ~ -ln U(1, T_max - 1), see base.py

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        steps, batch, _ = x.shape
        n, k = self.hidden_size, self.intermediate
        (h,) = state
        x2 = x.reshape(-1, self.input_size)
        mx = (x2 @ self.w_mx).view(steps, batch, -1).unbind(0)  # W_x x, hoisted
        gx_zr, gx_h = torch.addmm(self.bias, x2, self.w_x).view(steps, batch, -1).split([n + k, n], dim=2)
        from_h = DeferredMatmul(self.w_mh, zeros_base(x, steps, batch, k))
        from_m = DeferredMatmul(self.w_m, gx_zr)
        from_rm = DeferredMatmul(self.w_hm, gx_h)
        outs = []
        for t in range(steps):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            m = mx[t] * from_h(t, h_hat)  # eq. (5): m_t = (W_x x_t) ⊙ (W_h h_{t-1})
            z, r = torch.sigmoid(from_m(t, m)).split([n, k], dim=1)  # eqs. (25), (26)
            h_tilde = from_rm(t, r * m)  # eq. (27): h̃ = U_h x + V_h (r ⊙ m)
            h = (1.0 - z) * h + z * torch.tanh(h_tilde)  # eq. (18)
            outs.append(h)
        return torch.stack(outs), (h,)
