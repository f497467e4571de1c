"""Each cell against a direct, step-by-step transcription of its paper's equations.

The transcriptions read the parameters through the layout each cell documents and use nothing of
the cells' code. Row-vector convention: W x in the papers is x @ W here.
"""

from __future__ import annotations

import pytest
import torch
from torch import sigmoid, tanh

from trainer.cells import make_cell

T, B, M, N = 6, 3, 5, 4


def blocks(w: torch.Tensor, k: int) -> list[torch.Tensor]:
    """Split a stacked [in, k·n] weight (or [k·n] bias) into its k blocks along the last dim."""
    return list(w.chunk(k, dim=-1))


def lstm_step(p, x, h_hat, c):
    """Thesis §4.1 LSTM with the capped input gate min(i, 1 - f) (§4.6); gates i, j, f, o."""
    W_ix, W_jx, W_fx, W_ox = blocks(p["w_x"], 4)
    W_ih, W_jh, W_fh, W_oh = blocks(p["w_h"], 4)
    b_i, b_j, b_f, b_o = blocks(p["bias"], 4)
    i = sigmoid(x @ W_ix + h_hat @ W_ih + b_i)
    j = tanh(x @ W_jx + h_hat @ W_jh + b_j)
    f = sigmoid(x @ W_fx + h_hat @ W_fh + b_f)
    c = f * c + torch.minimum(i, 1 - f) * j
    o = sigmoid(x @ W_ox + h_hat @ W_oh + b_o)
    h = o * tanh(c)
    return h, c


def mogrifier_step(p, x, h_hat, c, rounds):
    """Mogrifier paper §2 eqs. (1)-(2), x^{-1} = x, h^0 = ĥ_prev, then the capped LSTM."""
    return lstm_step(p, *mogrify(p, x, h_hat, rounds), c)


def mogrify(p, x, h_hat, rounds):
    """x↑, h↑: the highest-indexed x^i, h^i of Mogrifier paper §2 eqs. (1)-(2)."""
    xs, hs = {-1: x}, {0: h_hat}
    for i in range(1, rounds + 1):
        b = p[f"gates.{i - 1}.bias"]
        if f"gates.{i - 1}.weight" in p:  # full rank, stored as Q^T
            Q = p[f"gates.{i - 1}.weight"].T
        else:  # Q^i = Q^i_left Q^i_right of rank k, stored as Q_right^T and Q_left^T
            Q_left, Q_right = p[f"gates.{i - 1}.w_out"].T, p[f"gates.{i - 1}.w_in"].T
            Q = Q_left @ Q_right
        if i % 2 == 1:
            xs[i] = 2 * sigmoid(hs[i - 1] @ Q.T + b) * xs[i - 2]  # eq. (1)
        else:
            hs[i] = 2 * sigmoid(xs[i - 1] @ Q.T + b) * hs[i - 2]  # eq. (2)
    return xs[max(xs)], hs[max(hs)]


def rlstm_step(p, x, h_hat, c, mask):
    """Thesis §4.1 RLSTM; the state mask also scales c in the output gate (§4.2)."""
    W_ix, W_jx = blocks(p["w_x"], 2)
    W_ih, W_jh, W_fh = blocks(p["w_h"], 3)
    W_fu, W_oc = p["w_fu"], p["w_oc"]
    b_i, b_j, b_f, b_o = blocks(p["bias"], 4)
    i = sigmoid(x @ W_ix + h_hat @ W_ih + b_i)
    j = tanh(x @ W_jx + h_hat @ W_jh + b_j)
    f = sigmoid((i * j) @ W_fu + h_hat @ W_fh + b_f)
    c = f * c + torch.minimum(i, 1 - f) * j
    o = sigmoid((c * mask) @ W_oc + b_o)
    h = o * tanh(c)
    return h, c


def mlstm_step(p, x, h_hat, c):
    """Multiplicative-models paper eqs. (5), (4), (11)-(13), (6)-(7), m replacing h_{t-1} (Krause)."""
    m = (x @ p["w_mx"]) * (h_hat @ p["w_mh"])  # eq. (5)
    U_i, U_j, U_f, U_o = blocks(p["w_x"], 4)
    V_i, V_j, V_f, V_o = blocks(p["w_m"], 4)
    b_i, b_j, b_f, b_o = blocks(p["bias"], 4)
    i = sigmoid(x @ U_i + m @ V_i + b_i)  # eq. (11)
    f = sigmoid(x @ U_f + m @ V_f + b_f)  # eq. (12)
    o = sigmoid(x @ U_o + m @ V_o + b_o)  # eq. (13)
    h_cand = x @ U_j + m @ V_j + b_j  # eq. (4)
    c = f * c + i * tanh(h_cand)  # eq. (6)
    h = o * tanh(c)  # eq. (7)
    return h, c


def tmlstm_step(p, x, h_hat, c):
    """Eqs. (14)-(17): one m per gate and for the candidate."""
    W_x, W_h, U, b = blocks(p["w_mx"], 4), blocks(p["w_mh"], 4), blocks(p["w_x"], 4), blocks(p["bias"], 4)
    pre = []
    for k in range(4):  # i, candidate, f, o
        m_k = (x @ W_x[k]) * (h_hat @ W_h[k])  # eq. (17)
        pre.append(x @ U[k] + m_k @ p["w_m"][k] + b[k])  # eqs. (14)-(16)
    i, f, o = sigmoid(pre[0]), sigmoid(pre[2]), sigmoid(pre[3])
    c = f * c + i * tanh(pre[1])
    h = o * tanh(c)
    return h, c


def mgru_step(p, x, h_prev, h_hat):
    """Eqs. (5), (25)-(27), (18)."""
    m = (x @ p["w_mx"]) * (h_hat @ p["w_mh"])  # eq. (5)
    U_z, U_r, U_h = blocks(p["w_x"], 3)
    V_z, V_r = blocks(p["w_m"], 2)
    V_h = p["w_hm"]
    b_z, b_r, b_h = blocks(p["bias"], 3)
    z = sigmoid(x @ U_z + m @ V_z + b_z)  # eq. (25)
    r = sigmoid(x @ U_r + m @ V_r + b_r)  # eq. (26)
    h_tilde = x @ U_h + (r * m) @ V_h + b_h  # eq. (27)
    return (1 - z) * h_prev + z * tanh(h_tilde)  # eq. (18)


def tmgru_step(p, x, h_prev, h_hat):
    """Eqs. (17), (22)-(24), (4), (18)."""
    W_zx, W_rx, W_hx = blocks(p["w_mx"], 3)
    W_zh, W_rh = blocks(p["w_mh"], 2)
    W_hh = p["w_hh"]
    U_z, U_r, U_h = blocks(p["w_x"], 3)
    V_z, V_r, V_h = p["w_m"]
    b_z, b_r, b_h = blocks(p["bias"], 3)
    m_z = (x @ W_zx) * (h_hat @ W_zh)  # eq. (17)
    m_r = (x @ W_rx) * (h_hat @ W_rh)  # eq. (17)
    z = sigmoid(x @ U_z + m_z @ V_z + b_z)  # eq. (22)
    r = sigmoid(x @ U_r + m_r @ V_r + b_r)  # eq. (23)
    m_h = (x @ W_hx) * ((r * h_hat) @ W_hh)  # eq. (24)
    h_tilde = x @ U_h + m_h @ V_h + b_h  # eq. (4)
    return (1 - z) * h_prev + z * tanh(h_tilde)  # eq. (18)


def naive(name, p, x, state, mask, rounds=0):
    outs = []
    if name in {"mgru", "tmgru"}:
        (h,) = state
        for t in range(x.shape[0]):
            step = mgru_step if name == "mgru" else tmgru_step
            h = step(p, x[t], h, h * mask)
            outs.append(h)
        return torch.stack(outs), (h,)
    h, c = state
    for t in range(x.shape[0]):
        h_hat = h * mask  # ĥ_{t-1} = h_{t-1} ⊙ M^state (thesis §4.2 eq. 1)
        if name == "rlstm":  # the Mogrifier RLSTM when rounds > 0 (Circling Back §3)
            x_up, h_up = mogrify(p, x[t], h_hat, rounds)
            h, c = rlstm_step(p, x_up, h_up, c, mask)
        elif name == "mogrifier_lstm":
            h, c = mogrifier_step(p, x[t], h_hat, c, rounds)
        else:
            h, c = {"lstm": lstm_step, "mlstm": mlstm_step, "tmlstm": tmlstm_step}[name](p, x[t], h_hat, c)
        outs.append(h)
    return torch.stack(outs), (h, c)


CASES = [
    ("lstm", 0, 0),
    ("mogrifier_lstm", 5, 2),  # rounds, rank: low rank, ends on an x round
    ("mogrifier_lstm", 4, 0),  # full rank, ends on an h round
    ("mogrifier_lstm", 1, -3),
    ("rlstm", 0, 0),
    ("rlstm", 5, 2),  # the Mogrifier RLSTM, low rank
    ("rlstm", 4, 0),  # full rank
    ("mlstm", 0, 0),
    ("tmlstm", 0, 0),
    ("mgru", 0, 0),
    ("tmgru", 0, 0),
]


@pytest.mark.parametrize(("name", "rounds", "rank"), CASES)
def test_cell_matches_its_equations(name, rounds, rank):
    torch.manual_seed(0)
    cell = make_cell(name, M, N, t_max=12.0, mogrifier_rounds=rounds, mogrifier_rank=rank).double()
    with torch.no_grad():  # weights large enough that no gate sits near 0.5 or saturates everywhere
        for param in cell.parameters():
            param.normal_(0.0, 0.8)
    x = torch.randn(T, B, M, dtype=torch.float64)
    state = tuple(torch.randn_like(s) for s in cell.zero_state(B, "cpu", torch.float64))
    mask = (torch.rand(B, N, dtype=torch.float64) > 0.3).double() / 0.7
    readout = torch.randn(T, B, N, dtype=torch.float64)

    got, got_state = cell(x, state, mask)
    (got * readout).sum().backward()
    params = {k: v.detach().clone().requires_grad_() for k, v in cell.named_parameters()}
    want, want_state = naive(name, params, x, state, mask, rounds)
    (want * readout).sum().backward()

    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    for a, b in zip(got_state, want_state, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    for k, param in cell.named_parameters():
        torch.testing.assert_close(param.grad, params[k].grad, rtol=1e-10, atol=1e-12, msg=k)
