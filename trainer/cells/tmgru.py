"""True multiplicative GRU: separate intermediate states for z, r and h̃ (Maupomé & Meurs §4.4).

Equation numbers refer to seeds/multiplicative-models-for-recurrent-lm.md: eqs. (22)-(24), (17),
(4), (18). Eq. (23) as printed, r = σ(U_r x) + V_r m_r, puts V_r m_r outside the sigmoid, so r
is no gate (it leaves (0, 1)) though §4.3 says the gates "are computed much in the same way"; it is
computable, and `form="printed"` computes it. The corrected and default forms read it as
r = σ(U_r x + V_r m_r), like eq. (22). Eq. (4)'s left side is printed h_t, but eq. (4) is eq. (2)
with its tensor factorized, whose left side is the candidate h̃_t: every form takes it as the
candidate and updates h by eq. (18). The state is (h,) only; the state mask scales h_prev where it
enters a product, the carry (1 - z) ⊙ h_prev keeps the unmasked state (see mgru.py). In the
paper's forms each m_* has the input's size (§5.1); see mlstm.py.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import GRUStateCell, State, chrono_update_gate_init_, uniform_init_
from .deferred import DeferredMatmul, zeros_base
from .mlstm import intermediate_size


class TMGRUCell(GRUStateCell):
    """m_z, m_r (eq. 17); z, r (eqs. 22-23); m_h = (W_hx x) ⊙ (W_hh (r ⊙ ĥ)) (eq. 24); GRU update.

    Parameters, with k the intermediate size: w_mx [m, 3k] (W_zx, W_rx, W_hx), w_mh [n, 2k]
    (W_zh, W_rh), w_hh [n, k] (W_hh), w_x [m, 3n] (U_z, U_r, U_h), w_m [3, k, n] (V_z, V_r, V_h),
    bias [3n] (b_z, b_r, b_h). `t_max` Chrono-initializes b_z (see base.py); None leaves it at 0.
    """

    def __init__(
        self, input_size: int, hidden_size: int, t_max: float | None = None, form: str = "default"
    ) -> None:
        super().__init__(input_size, hidden_size)
        n, k = hidden_size, intermediate_size(form, input_size, hidden_size)
        self.intermediate = k
        self.printed = form == "printed"
        self.w_mx = nn.Parameter(torch.empty(input_size, 3 * k))
        self.w_mh = nn.Parameter(torch.empty(n, 2 * k))
        self.w_hh = nn.Parameter(torch.empty(n, k))
        self.w_x = nn.Parameter(torch.empty(input_size, 3 * n))
        self.w_m = nn.Parameter(torch.empty(3, k, n))
        self.bias = nn.Parameter(torch.empty(3 * n))
        uniform_init_(self, input_size + n)
        if t_max is not None:
            chrono_update_gate_init_(self.bias[:n], t_max)  # b_z ~ -ln U(1, T_max - 1), see base.py

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        steps, batch, _ = x.shape
        n, k = self.hidden_size, self.intermediate
        (h,) = state
        x2 = x.reshape(-1, self.input_size)
        mx_zr, mx_h = (x2 @ self.w_mx).view(steps, batch, -1).split([2 * k, k], dim=2)  # W_*x x
        mx_zr, mx_h = mx_zr.unbind(0), mx_h.unbind(0)
        gx = torch.addmm(self.bias, x2, self.w_x).view(steps, batch, -1).split(n, dim=2)  # U_* x + b_*
        from_h = DeferredMatmul(self.w_mh, zeros_base(x, steps, batch, 2 * k))
        from_rh = DeferredMatmul(self.w_hh, zeros_base(x, steps, batch, k))
        from_m = [DeferredMatmul(self.w_m[g], gx[g]) for g in range(3)]
        if self.printed:  # eq. (23) as printed: r = σ(U_r x) + V_r m_r, the sigmoid hoisted
            from_m[1] = DeferredMatmul(self.w_m[1], torch.sigmoid(gx[1]))
        outs = []
        for t in range(steps):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            m_z, m_r = (mx_zr[t] * from_h(t, h_hat)).chunk(2, dim=1)  # eq. (17) for z and r
            z = torch.sigmoid(from_m[0](t, m_z))  # eq. (22): z = σ(U_z x + V_z m_z)
            r = from_m[1](t, m_r)  # eq. (23) as printed, or its pre-activation U_r x + V_r m_r
            if not self.printed:
                r = torch.sigmoid(r)  # eq. (23) corrected: r = σ(U_r x + V_r m_r)
            m_h = mx_h[t] * from_rh(t, r * h_hat)  # eq. (24): m_h = (W_x x) ⊙ (W_h (r ⊙ h_{t-1}))
            h_tilde = from_m[2](t, m_h)  # eq. (4): h̃ = U_h x + V_h m_h
            h = (1.0 - z) * h + z * torch.tanh(h_tilde)  # eq. (18)
            outs.append(h)
        return torch.stack(outs), (h,)
