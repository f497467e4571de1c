"""Multiplicative LSTM: one intermediate state m shared by all gates (Maupomé & Meurs §4.1; Krause et al.).

Equation numbers refer to the paper (Maupomé & Meurs, "Multiplicative Models for Recurrent Language
Modeling"). Three forms (`multiplicative_form`, shared by mLSTM, tmLSTM, mGRU and tmGRU; `FORMS`):

* "printed": the equations exactly as printed. Here that is eqs. (11)-(13), whose gates read
  W_* h_{t-1} + V_* m_t and take the input only through m (no U_* x term); eq. (7)'s
  h = o ⊙ σ(c); and intermediate states of the cell's input size ("we set the dimensionality of
  the intermediate state to that of the input", §5.1). The candidate ĥ of eq. (6) is not printed
  for the mLSTM; it is eq. (4)'s U x + V m, the mRNN's candidate, which is what "m_t ... replace[s]
  h_{t-1} in all equations" (§4.1) makes of eq. (1).
* "corrected": the printed form with its typos corrected where the paper contradicts itself. The
  text says m "replace[s] h_{t-1} in all equations", as in Krause et al.'s mLSTM, and eqs. (14)-(16)
  keep U_* x, so eqs. (11)-(13) become σ(U_* x + V_* m); eq. (23) becomes a gate (tmgru.py).
  Eq. (7)'s σ(c) stays: the text confirms it ("σ is the sigmoid function, squashing its input
  between 0 and 1").
* "default" (the product's reading): the corrected equations with h = o ⊙ tanh(c), as Krause et
  al.'s mLSTM and every LSTM of the thesis (§4.1), and intermediate states of the hidden size (the
  input-sized one is the paper's choice "to keep the model small", §5.1, not the model's definition).

The input gate is not capped: the paper's cell is the plain LSTM update.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import RecurrentCell, State, chrono_init_, uniform_init_
from .deferred import DeferredMatmul, zeros_base

FORMS = ("default", "corrected", "printed")


def check_form(form: str) -> str:
    """`form` if it is one of FORMS; otherwise a ValueError naming the setting and its values."""
    if form not in FORMS:
        raise ValueError(f"multiplicative_form must be one of {list(FORMS)}, not {form!r}")
    return form


def intermediate_size(form: str, input_size: int, hidden_size: int) -> int:
    """The size of the intermediate states m: the hidden size by default, the input size in the
    paper's forms (§5.1)."""
    return hidden_size if check_form(form) == "default" else input_size


def lstm_update(g: Tensor, c_prev: Tensor, form: str = "default") -> tuple[Tensor, Tensor]:
    """c = f ⊙ c_prev + i ⊙ tanh(ĥ) (eq. (6)); h = o ⊙ tanh(c) by default, o ⊙ σ(c) in the paper's
    forms (eq. (7)), from g = [i, ĥ, f, o]."""
    gi, gj, gf, go = g.chunk(4, dim=1)
    c = torch.sigmoid(gf) * c_prev + torch.sigmoid(gi) * torch.tanh(gj)  # eq. (6)
    squash = torch.tanh if form == "default" else torch.sigmoid  # Krause et al. / eq. (7)
    return torch.sigmoid(go) * squash(c), c


class MLSTMCell(RecurrentCell):
    """m = (W_mx x) ⊙ (W_mh ĥ_prev) (eq. 5); i, ĥ, f, o = U x + V m + b (eqs. 4, 11-13); LSTM update.

    Parameters, with k the intermediate size (`intermediate_size`): w_mx [m, k], w_mh [n, k] (the
    factors of eq. 5), w_m [k, 4n] (V), bias [4n], and U: w_x [m, 4n] (U_i, U_j, U_f, U_o); in
    the printed form w_x [m, n] (U of the candidate, eq. 4) and w_h [n, 3n] (W_i, W_f, W_o of
    eqs. 11-13 as printed). Gate blocks in the order i, ĥ (the candidate, "j"), f, o. `t_max`
    Chrono-initializes b^f (thesis §4.4); None leaves it at 0.
    """

    w_h: nn.Parameter | None

    def __init__(
        self, input_size: int, hidden_size: int, t_max: float | None = None, form: str = "default"
    ) -> None:
        super().__init__(input_size, hidden_size)
        n, k = hidden_size, intermediate_size(form, input_size, hidden_size)
        self.form = form
        printed = form == "printed"
        self.w_mx = nn.Parameter(torch.empty(input_size, k))
        self.w_mh = nn.Parameter(torch.empty(n, k))
        self.w_x = nn.Parameter(torch.empty(input_size, n if printed else 4 * n))
        self.w_h = nn.Parameter(torch.empty(n, 3 * n)) if printed else None
        self.w_m = nn.Parameter(torch.empty(k, 4 * n))
        self.bias = nn.Parameter(torch.empty(4 * n))
        uniform_init_(self, input_size + n)
        if t_max is not None:
            chrono_init_(self.bias[2 * n : 3 * n], t_max)  # b^f ~ ln U(1, T_max - 1) (thesis §4.4)

    def _input_terms(self, x2: Tensor) -> Tensor:
        """U x + b for the four blocks [TB, 4n]; as printed, only the candidate has a U x (eq. 4)."""
        if self.w_h is None:
            return torch.addmm(self.bias, x2, self.w_x)
        ux = x2 @ self.w_x
        zero = torch.zeros_like(ux)
        return torch.cat([zero, ux, zero, zero], dim=1) + self.bias

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        steps, batch, _ = x.shape
        n, k = self.hidden_size, self.w_mh.shape[1]
        h, c = state
        x2 = x.reshape(-1, self.input_size)
        mx = (x2 @ self.w_mx).view(steps, batch, -1).unbind(0)  # W_mx x, hoisted
        gx = self._input_terms(x2).view(steps, batch, -1)  # U x + b, hoisted
        # Everything h_{t-1} multiplies: W_mh (eq. 5), and as printed W_i, W_f, W_o (eqs. 11-13).
        w_from_h = self.w_mh if self.w_h is None else torch.cat([self.w_mh, self.w_h], dim=1)
        from_h = DeferredMatmul(w_from_h, zeros_base(x, steps, batch, w_from_h.shape[1]))
        from_m = DeferredMatmul(self.w_m, gx)
        outs = []
        for t in range(steps):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            hw = from_h(t, h_hat)
            m = mx[t] * hw[:, :k]  # eq. (5): m_t = (W_x x_t) ⊙ (W_h h_{t-1})
            g = from_m(t, m)
            if self.w_h is not None:  # eqs. (11)-(13) as printed: σ(W_* h_{t-1} + V_* m_t)
                gi, gj, gf, go = g.split(n, dim=1)
                wi, wf, wo = hw[:, k:].split(n, dim=1)
                g = torch.cat([gi + wi, gj, gf + wf, go + wo], dim=1)
            h, c = lstm_update(g, c, self.form)
            outs.append(h)
        return torch.stack(outs), (h, c)
