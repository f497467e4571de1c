"""The multiplicative cells with `multiplicative_form: printed` against the paper as printed.

Maupomé & Meurs (seeds/multiplicative-models-for-recurrent-lm.md): the LSTM cells output
h = o ⊙ σ(c) (eq. 7, sigmoid, not tanh), and every intermediate state m has the size of the cell's
input (§5.1: "we set the dimensionality of the intermediate state to that of the input"). Each
transcription below reads the parameters through the layout the cell documents, with k = M the
intermediate size, and uses nothing of the cells' code. Row vectors: W x in the paper is x @ W.
"""

from __future__ import annotations

import pytest
import torch
from torch import sigmoid, tanh

from trainer import make_config
from trainer.cells import make_cell
from trainer.model import LanguageModel

T, B, M, N = 5, 3, 6, 4  # input size 6 = the printed intermediate size, hidden size 4
K = M


def split(w: torch.Tensor, sizes: list[int]) -> list[torch.Tensor]:
    return list(w.split(sizes, dim=-1))


def mlstm_printed(p, x, h_hat, c):
    """Eq. (5) with m of size K; eqs. (11)-(13) read with U x (see mlstm.py); eqs. (4), (6), (7)."""
    m = (x @ p["w_mx"]) * (h_hat @ p["w_mh"])  # eq. (5), m ∈ R^K
    U_i, U_j, U_f, U_o = split(p["w_x"], [N] * 4)
    V_i, V_j, V_f, V_o = split(p["w_m"], [N] * 4)
    b_i, b_j, b_f, b_o = split(p["bias"], [N] * 4)
    i = sigmoid(x @ U_i + m @ V_i + b_i)  # eq. (11)
    f = sigmoid(x @ U_f + m @ V_f + b_f)  # eq. (12)
    o = sigmoid(x @ U_o + m @ V_o + b_o)  # eq. (13)
    c = f * c + i * tanh(x @ U_j + m @ V_j + b_j)  # eqs. (4), (6)
    return o * sigmoid(c), c  # eq. (7) as printed


def tmlstm_printed(p, x, h_hat, c):
    """Eqs. (14)-(17), one m_* ∈ R^K per gate and for the candidate; eqs. (6), (7)."""
    W_x, W_h = split(p["w_mx"], [K] * 4), split(p["w_mh"], [K] * 4)
    U, b = split(p["w_x"], [N] * 4), split(p["bias"], [N] * 4)
    pre = [x @ U[g] + ((x @ W_x[g]) * (h_hat @ W_h[g])) @ p["w_m"][g] + b[g] for g in range(4)]
    i, f, o = sigmoid(pre[0]), sigmoid(pre[2]), sigmoid(pre[3])
    c = f * c + i * tanh(pre[1])  # eq. (6)
    return o * sigmoid(c), c  # eq. (7) as printed


def mgru_printed(p, x, h_prev, h_hat):
    """Eqs. (5), (25)-(27), (18): m, and the reset gate r that filters it, in R^K."""
    m = (x @ p["w_mx"]) * (h_hat @ p["w_mh"])  # eq. (5)
    U_z, U_r, U_h = split(p["w_x"], [N, K, N])
    V_z, V_r = split(p["w_m"], [N, K])
    b_z, b_r, b_h = split(p["bias"], [N, K, N])
    z = sigmoid(x @ U_z + m @ V_z + b_z)  # eq. (25)
    r = sigmoid(x @ U_r + m @ V_r + b_r)  # eq. (26)
    h_tilde = x @ U_h + (r * m) @ p["w_hm"] + b_h  # eq. (27)
    return (1 - z) * h_prev + z * tanh(h_tilde)  # eq. (18)


def tmgru_printed(p, x, h_prev, h_hat):
    """Eqs. (17), (22)-(24), (4), (18) with m_z, m_r, m_h ∈ R^K; r ∈ R^N resets h_{t-1}."""
    W_zx, W_rx, W_hx = split(p["w_mx"], [K] * 3)
    W_zh, W_rh = split(p["w_mh"], [K] * 2)
    U_z, U_r, U_h = split(p["w_x"], [N] * 3)
    V_z, V_r, V_h = p["w_m"]
    b_z, b_r, b_h = split(p["bias"], [N] * 3)
    z = sigmoid(x @ U_z + ((x @ W_zx) * (h_hat @ W_zh)) @ V_z + b_z)  # eqs. (17), (22)
    r = sigmoid(x @ U_r + ((x @ W_rx) * (h_hat @ W_rh)) @ V_r + b_r)  # eqs. (17), (23) as a gate
    m_h = (x @ W_hx) * ((r * h_hat) @ p["w_hh"])  # eq. (24)
    return (1 - z) * h_prev + z * tanh(x @ U_h + m_h @ V_h + b_h)  # eqs. (4), (18)


STEPS = {"mlstm": mlstm_printed, "tmlstm": tmlstm_printed, "mgru": mgru_printed, "tmgru": tmgru_printed}


def run(name, p, x, state, mask):
    outs = []
    if name in {"mgru", "tmgru"}:
        (h,) = state
        for t in range(T):
            h = STEPS[name](p, x[t], h, h * mask)
            outs.append(h)
        return torch.stack(outs), (h,)
    h, c = state
    for t in range(T):
        h, c = STEPS[name](p, x[t], h * mask, c)
        outs.append(h)
    return torch.stack(outs), (h, c)


@pytest.mark.parametrize("name", sorted(STEPS))
def test_printed_form_matches_the_printed_equations(name):
    torch.manual_seed(0)
    cell = make_cell(name, M, N, multiplicative_form="printed").double()
    with torch.no_grad():  # weights large enough that gates spread over (0, 1)
        for param in cell.parameters():
            param.normal_(0.0, 0.8)
    x = torch.randn(T, B, M, dtype=torch.float64)
    state = tuple(torch.randn_like(s) for s in cell.zero_state(B, "cpu", torch.float64))
    mask = (torch.rand(B, N, dtype=torch.float64) > 0.3).double() / 0.7
    readout = torch.randn(T, B, N, dtype=torch.float64)

    got, got_state = cell(x, state, mask)
    (got * readout).sum().backward()
    params = {k: v.detach().clone().requires_grad_() for k, v in cell.named_parameters()}
    want, want_state = run(name, params, x, state, mask)
    (want * readout).sum().backward()

    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    for a, b in zip(got_state, want_state, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    for k, param in cell.named_parameters():
        torch.testing.assert_close(param.grad, params[k].grad, rtol=1e-10, atol=1e-12, msg=k)


@pytest.mark.parametrize("name", sorted(STEPS))
def test_the_two_forms_differ_and_printed_intermediates_have_the_input_size(name):
    default = make_cell(name, M, N)
    printed = make_cell(name, M, N, multiplicative_form="printed")
    assert printed.w_mh.shape[1] in (K, 2 * K, 4 * K) and default.w_mh.shape[1] in (N, 2 * N, 4 * N)
    n_default = sum(p.numel() for p in default.parameters())
    n_printed = sum(p.numel() for p in printed.parameters())
    assert n_printed > n_default  # K = 6 > N = 4: larger intermediate states, more weights


def test_the_config_setting_reaches_the_model_and_the_budget_solver():
    values = {"cell": "mlstm", "input_embedding_ratio": 0.5, "num_layers": 2}
    default = LanguageModel(make_config({**values, "hidden_size": 32}), vocab_size=20, hidden_size=32)
    printed_cfg = make_config({**values, "hidden_size": 32, "multiplicative_form": "printed"})
    printed = LanguageModel(printed_cfg, vocab_size=20, hidden_size=32)
    assert default.layers[0].w_mh.shape == (32, 32)
    assert printed.layers[0].w_mh.shape == (32, 16)  # layer 0 reads the 16-wide embedding (§5.1)
    assert printed.layers[1].w_mh.shape == (32, 32)  # layer 1 reads the 32-wide layer below
    with pytest.raises(ValueError, match="multiplicative_form must be one of"):
        make_cell("mgru", M, N, multiplicative_form="typeset")
