"""Multiplicative LSTM: one intermediate state m shared by all gates (Maupomé & Meurs §4.1; Krause et al.).

Equation numbers refer to seeds/multiplicative-models-for-recurrent-lm.md. The paper's text says m
"replace[s] h_{t-1} in all equations", as in Krause et al.'s original mLSTM, so every gate reads x and
m; eqs. (11)-(13) as printed show W h_{t-1} in place of the input term, which contradicts that text
and eqs. (14)-(16). The input gate is not capped here: the paper's cell is the plain LSTM update.

Two readings of the paper (`multiplicative_form`, shared by mLSTM, tmLSTM, mGRU and tmGRU):
"default" computes h = o ⊙ tanh(c), as Krause et al.'s mLSTM and every LSTM of the thesis (§4.1),
with intermediate states of the hidden size; "printed" follows the paper as printed: eq. (7)'s
h = o ⊙ σ(c), and intermediate states of the cell's input size ("we set the dimensionality of the
intermediate state to that of the input in order to keep the model small", §5.1).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import RecurrentCell, State, chrono_init_, uniform_init_
from .deferred import DeferredMatmul, zeros_base

FORMS = ("default", "printed")


def intermediate_size(form: str, input_size: int, hidden_size: int) -> int:
    """The size of the intermediate states m: the hidden size, or the input size as printed (§5.1)."""
    if form not in FORMS:
        raise ValueError(f"multiplicative_form must be one of {list(FORMS)}, not {form!r}")
    return input_size if form == "printed" else hidden_size


def lstm_update(g: Tensor, c_prev: Tensor, form: str = "default") -> tuple[Tensor, Tensor]:
    """c = f ⊙ c_prev + i ⊙ tanh(ĥ) (eq. (6)); h = o ⊙ tanh(c), or o ⊙ σ(c) as eq. (7) prints it,
    from g = [i, ĥ, f, o]."""
    gi, gj, gf, go = g.chunk(4, dim=1)
    c = torch.sigmoid(gf) * c_prev + torch.sigmoid(gi) * torch.tanh(gj)  # eq. (6)
    squash = torch.sigmoid if form == "printed" else torch.tanh  # eq. (7) / Krause et al., thesis §4.1
    return torch.sigmoid(go) * squash(c), c


class MLSTMCell(RecurrentCell):
    """m = (W_mx x) ⊙ (W_mh ĥ_prev) (eq. 5); i, ĥ, f, o = U x + V m + b (eqs. 4, 11-13); LSTM update.

    Parameters, with k the intermediate size (`intermediate_size`): w_mx [m, k], w_mh [n, k] (the
    factors of eq. 5), w_x [m, 4n] (U), w_m [k, 4n] (V), bias [4n]; gate blocks in the order i, ĥ
    (the candidate, "j"), f, o. `t_max` Chrono-initializes b^f (thesis §4.4); None leaves it at 0.
    """

    def __init__(
        self, input_size: int, hidden_size: int, t_max: float | None = None, form: str = "default"
    ) -> None:
        super().__init__(input_size, hidden_size)
        n, k = hidden_size, intermediate_size(form, input_size, hidden_size)
        self.form = form
        self.w_mx = nn.Parameter(torch.empty(input_size, k))
        self.w_mh = nn.Parameter(torch.empty(n, k))
        self.w_x = nn.Parameter(torch.empty(input_size, 4 * n))
        self.w_m = nn.Parameter(torch.empty(k, 4 * n))
        self.bias = nn.Parameter(torch.empty(4 * n))
        uniform_init_(self, input_size + n)
        if t_max is not None:
            chrono_init_(self.bias[2 * n : 3 * n], t_max)  # b^f ~ ln U(1, T_max - 1) (thesis §4.4)

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        steps, batch, _ = x.shape
        h, c = state
        x2 = x.reshape(-1, self.input_size)
        mx = (x2 @ self.w_mx).view(steps, batch, -1).unbind(0)  # W_mx x, hoisted
        gx = torch.addmm(self.bias, x2, self.w_x).view(steps, batch, -1)  # U x + b, hoisted
        from_h = DeferredMatmul(self.w_mh, zeros_base(x, steps, batch, self.w_mh.shape[1]))
        from_m = DeferredMatmul(self.w_m, gx)
        outs = []
        for t in range(steps):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            m = mx[t] * from_h(t, h_hat)  # eq. (5): m_t = (W_x x_t) ⊙ (W_h h_{t-1})
            h, c = lstm_update(from_m(t, m), c, self.form)
            outs.append(h)
        return torch.stack(outs), (h, c)
