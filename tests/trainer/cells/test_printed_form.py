"""The multiplicative cells' paper forms against transcriptions of the paper's equations.

Maupomé & Meurs ("Multiplicative Models for Recurrent Language Modeling"). Both paper forms output
h = o ⊙ σ(c) in the LSTM cells (eq. 7, sigmoid, not tanh), and every intermediate state m has the
size of the cell's input (§5.1: "we set the dimensionality of the intermediate state to that of
the input"). `printed` is the equations as printed; `corrected` differs in eqs. (11)-(13), which
as printed read W_* h_{t-1} where the text has the input (m "replace[s] h_{t-1}"), and eq. (23),
which as printed has V_r m_r outside the sigmoid. Each transcription below is written from the
paper's text in plain torch ops, reading the parameters through the layout the cell documents,
with k = M the intermediate size, and uses nothing of the cells' code. Row vectors: W x in the
paper is x @ W.
"""

from __future__ import annotations

import pytest
import torch
from torch import sigmoid, tanh

from trainer import make_config
from trainer.cells import make_cell
from trainer.model import LanguageModel

T, B, M, N = 5, 3, 6, 4  # input size 6 = the paper's intermediate size, hidden size 4
K = M


def split(w: torch.Tensor, sizes: list[int]) -> list[torch.Tensor]:
    return list(w.split(sizes, dim=-1))


def mlstm_printed(p, x, h_hat, c):
    """Eqs. (5), (11)-(13) as printed, (4), (6), (7): the gates read h_{t-1} and m, not x."""
    m = (x @ p["w_mx"]) * (h_hat @ p["w_mh"])  # eq. (5), m ∈ R^K
    W_i, W_f, W_o = split(p["w_h"], [N] * 3)
    V_i, V_j, V_f, V_o = split(p["w_m"], [N] * 4)
    b_i, b_j, b_f, b_o = split(p["bias"], [N] * 4)
    i = sigmoid(h_hat @ W_i + m @ V_i + b_i)  # eq. (11): i_t = σ(W_i h_{t-1} + V_i m_t)
    f = sigmoid(h_hat @ W_f + m @ V_f + b_f)  # eq. (12): f_t = σ(W_f h_{t-1} + V_f m_t)
    o = sigmoid(h_hat @ W_o + m @ V_o + b_o)  # eq. (13): o_t = σ(W_o h_{t-1} + V_o m_t)
    c = f * c + i * tanh(x @ p["w_x"] + m @ V_j + b_j)  # eqs. (4), (6): ĥ_t = U x_t + V m_t
    return o * sigmoid(c), c  # eq. (7): h_t = o_t ⊙ σ(c_t)


def mlstm_corrected(p, x, h_hat, c):
    """Eq. (5); eqs. (11)-(13) with U x in place of W h_{t-1} (m replaces h_{t-1}); (4), (6), (7)."""
    m = (x @ p["w_mx"]) * (h_hat @ p["w_mh"])  # eq. (5), m ∈ R^K
    U_i, U_j, U_f, U_o = split(p["w_x"], [N] * 4)
    V_i, V_j, V_f, V_o = split(p["w_m"], [N] * 4)
    b_i, b_j, b_f, b_o = split(p["bias"], [N] * 4)
    i = sigmoid(x @ U_i + m @ V_i + b_i)  # eq. (11) corrected
    f = sigmoid(x @ U_f + m @ V_f + b_f)  # eq. (12) corrected
    o = sigmoid(x @ U_o + m @ V_o + b_o)  # eq. (13) corrected
    c = f * c + i * tanh(x @ U_j + m @ V_j + b_j)  # eqs. (4), (6)
    return o * sigmoid(c), c  # eq. (7) as printed


def tmlstm_paper(p, x, h_hat, c):
    """Eqs. (14)-(17), one m_* ∈ R^K per gate and for the candidate; eqs. (6), (7). No typo here."""
    W_x, W_h = split(p["w_mx"], [K] * 4), split(p["w_mh"], [K] * 4)
    U, b = split(p["w_x"], [N] * 4), split(p["bias"], [N] * 4)
    pre = [x @ U[g] + ((x @ W_x[g]) * (h_hat @ W_h[g])) @ p["w_m"][g] + b[g] for g in range(4)]
    i, f, o = sigmoid(pre[0]), sigmoid(pre[2]), sigmoid(pre[3])
    c = f * c + i * tanh(pre[1])  # eq. (6)
    return o * sigmoid(c), c  # eq. (7) as printed


def mgru_paper(p, x, h_prev, h_hat):
    """Eqs. (5), (25)-(27), (18): m, and the reset gate r that filters it, in R^K. No typo here."""
    m = (x @ p["w_mx"]) * (h_hat @ p["w_mh"])  # eq. (5)
    U_z, U_r, U_h = split(p["w_x"], [N, K, N])
    V_z, V_r = split(p["w_m"], [N, K])
    b_z, b_r, b_h = split(p["bias"], [N, K, N])
    z = sigmoid(x @ U_z + m @ V_z + b_z)  # eq. (25)
    r = sigmoid(x @ U_r + m @ V_r + b_r)  # eq. (26)
    h_tilde = x @ U_h + (r * m) @ p["w_hm"] + b_h  # eq. (27)
    return (1 - z) * h_prev + z * tanh(h_tilde)  # eq. (18)


def tmgru(p, x, h_prev, h_hat, printed):
    """Eqs. (17), (22)-(24), (4), (18) with m_z, m_r, m_h ∈ R^K; r ∈ R^N resets h_{t-1}."""
    W_zx, W_rx, W_hx = split(p["w_mx"], [K] * 3)
    W_zh, W_rh = split(p["w_mh"], [K] * 2)
    U_z, U_r, U_h = split(p["w_x"], [N] * 3)
    V_z, V_r, V_h = p["w_m"]
    b_z, b_r, b_h = split(p["bias"], [N] * 3)
    m_z = (x @ W_zx) * (h_hat @ W_zh)  # eq. (17)
    m_r = (x @ W_rx) * (h_hat @ W_rh)  # eq. (17)
    z = sigmoid(x @ U_z + m_z @ V_z + b_z)  # eq. (22)
    if printed:
        r = sigmoid(x @ U_r + b_r) + m_r @ V_r  # eq. (23): r_t = σ(U_r x_t) + V_r m_{r,t}
    else:
        r = sigmoid(x @ U_r + m_r @ V_r + b_r)  # eq. (23) corrected, a gate like eq. (22)
    m_h = (x @ W_hx) * ((r * h_hat) @ p["w_hh"])  # eq. (24)
    return (1 - z) * h_prev + z * tanh(x @ U_h + m_h @ V_h + b_h)  # eqs. (4), (18)


def tmgru_printed(p, x, h_prev, h_hat):
    return tmgru(p, x, h_prev, h_hat, printed=True)


def tmgru_corrected(p, x, h_prev, h_hat):
    return tmgru(p, x, h_prev, h_hat, printed=False)


STEPS = {
    "printed": {"mlstm": mlstm_printed, "tmlstm": tmlstm_paper, "mgru": mgru_paper, "tmgru": tmgru_printed},
    "corrected": {
        "mlstm": mlstm_corrected,
        "tmlstm": tmlstm_paper,
        "mgru": mgru_paper,
        "tmgru": tmgru_corrected,
    },
}
CASES = [(form, name) for form in sorted(STEPS) for name in sorted(STEPS[form])]


def run(step, name, p, x, state, mask):
    outs = []
    if name in {"mgru", "tmgru"}:
        (h,) = state
        for t in range(T):
            h = step(p, x[t], h, h * mask)
            outs.append(h)
        return torch.stack(outs), (h,)
    h, c = state
    for t in range(T):
        h, c = step(p, x[t], h * mask, c)
        outs.append(h)
    return torch.stack(outs), (h, c)


def spread_(cell):
    """Weights large enough that gates spread over (0, 1)."""
    torch.manual_seed(0)
    with torch.no_grad():
        for param in cell.parameters():
            param.normal_(0.0, 0.8)
    return cell


def inputs():
    torch.manual_seed(1)
    x = torch.randn(T, B, M, dtype=torch.float64)
    mask = (torch.rand(B, N, dtype=torch.float64) > 0.3).double() / 0.7
    return x, mask


@pytest.mark.parametrize(("form", "name"), CASES)
def test_paper_forms_match_their_transcription(form, name):
    cell = spread_(make_cell(name, M, N, multiplicative_form=form).double())
    x, mask = inputs()
    state = tuple(torch.randn_like(s) for s in cell.zero_state(B, "cpu", torch.float64))
    readout = torch.randn(T, B, N, dtype=torch.float64)

    got, got_state = cell(x, state, mask)
    (got * readout).sum().backward()
    params = {k: v.detach().clone().requires_grad_() for k, v in cell.named_parameters()}
    want, want_state = run(STEPS[form][name], name, params, x, state, mask)
    (want * readout).sum().backward()

    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    for a, b in zip(got_state, want_state, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    for k, param in cell.named_parameters():
        torch.testing.assert_close(param.grad, params[k].grad, rtol=1e-10, atol=1e-12, msg=k)


def test_printed_mlstm_gates_read_h_where_corrected_reads_x():
    """Eqs. (11)-(13): the printed cell has W_i, W_f, W_o [N, 3N] on h_{t-1} and a U for the
    candidate only; the corrected one U_i, U_j, U_f, U_o [M, 4N] and no W on h_{t-1}."""
    printed = make_cell("mlstm", M, N, multiplicative_form="printed")
    corrected = make_cell("mlstm", M, N, multiplicative_form="corrected")
    assert printed.w_h.shape == (N, 3 * N) and printed.w_x.shape == (M, N)
    assert corrected.w_h is None and corrected.w_x.shape == (M, 4 * N)


def _mlstm_pair(gate_terms: float):
    """A printed and a corrected mLSTM sharing eq. (5)'s factors, V, b and the candidate's U; their
    gates' own terms (printed W_* h_{t-1}, corrected U_* x) drawn and scaled by `gate_terms`."""
    printed = spread_(make_cell("mlstm", M, N, multiplicative_form="printed").double())
    corrected = make_cell("mlstm", M, N, multiplicative_form="corrected").double()
    with torch.no_grad():
        for k in ("w_mx", "w_mh", "w_m", "bias"):
            getattr(corrected, k).copy_(getattr(printed, k))
        u = torch.randn(M, 4 * N, dtype=torch.float64) * gate_terms
        u[:, N : 2 * N] = printed.w_x  # U_j of the candidate, eq. (4)
        corrected.w_x.copy_(u)
        printed.w_h.mul_(gate_terms)
    return printed, corrected


def _tmgru_pair():
    printed = spread_(make_cell("tmgru", M, N, multiplicative_form="printed").double())
    corrected = make_cell("tmgru", M, N, multiplicative_form="corrected").double()
    corrected.load_state_dict(printed.state_dict())
    return printed, corrected


def _outputs(cell):
    x, mask = inputs()
    state = tuple(torch.randn_like(s) for s in cell.zero_state(B, "cpu", torch.float64))
    with torch.no_grad():
        return cell(x, state, mask)[0]


def test_printed_and_corrected_mlstm_differ_exactly_by_the_gate_terms_of_eqs_11_13():
    same = _mlstm_pair(0.0)  # up to the order of float64 sums
    torch.testing.assert_close(_outputs(same[0]), _outputs(same[1]), rtol=1e-12, atol=1e-12)
    printed, corrected = _mlstm_pair(1.0)
    assert (_outputs(printed) - _outputs(corrected)).abs().max() > 1e-2


def test_printed_and_corrected_tmgru_differ_exactly_by_where_eq_23_closes_the_sigmoid():
    printed, corrected = _tmgru_pair()
    assert (_outputs(printed) - _outputs(corrected)).abs().max() > 1e-2
    with torch.no_grad():  # V_r = 0: σ(U_r x) + V_r m_r = σ(U_r x + V_r m_r)
        printed.w_m[1].zero_()
        corrected.w_m[1].zero_()
    torch.testing.assert_close(_outputs(printed), _outputs(corrected), rtol=0, atol=0)


@pytest.mark.parametrize("name", ["tmlstm", "mgru"])
def test_printed_and_corrected_are_one_cell_where_the_paper_has_no_typo(name):
    printed = spread_(make_cell(name, M, N, multiplicative_form="printed").double())
    corrected = make_cell(name, M, N, multiplicative_form="corrected").double()
    corrected.load_state_dict(printed.state_dict())
    torch.testing.assert_close(_outputs(printed), _outputs(corrected), rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(STEPS["printed"]))
def test_default_differs_from_corrected_in_eq_7_and_the_intermediate_size(name):
    default = make_cell(name, M, N)
    corrected = make_cell(name, M, N, multiplicative_form="corrected")
    assert corrected.w_mh.shape[1] in (K, 2 * K, 4 * K) and default.w_mh.shape[1] in (N, 2 * N, 4 * N)
    n_default = sum(p.numel() for p in default.parameters())
    n_corrected = sum(p.numel() for p in corrected.parameters())
    assert n_corrected > n_default  # K = 6 > N = 4: larger intermediate states, more weights


def test_default_lstm_cells_squash_c_with_tanh_and_the_paper_forms_with_sigmoid():
    """Eq. (7): with equal intermediate sizes (M = N) default and corrected share weights, reach
    the same c after one step, and only h = o ⊙ tanh(c) against o ⊙ σ(c) tells them apart."""
    default = spread_(make_cell("tmlstm", N, N).double())
    corrected = make_cell("tmlstm", N, N, multiplicative_form="corrected").double()
    corrected.load_state_dict(default.state_dict())
    x = torch.randn(1, B, N, dtype=torch.float64)
    state = default.zero_state(B, "cpu", torch.float64)
    with torch.no_grad():
        _, (h_default, c) = default(x, state)
        _, (h_corrected, c_corrected) = corrected(x, state)
    torch.testing.assert_close(c, c_corrected, rtol=0, atol=0)
    torch.testing.assert_close(h_default / tanh(c), h_corrected / sigmoid(c))  # both are o
    assert (h_default - h_corrected).abs().max() > 1e-2


def test_the_config_setting_reaches_the_model_and_the_budget_solver():
    values = {"cell": "mlstm", "input_embedding_ratio": 0.5, "num_layers": 2}
    default = LanguageModel(make_config({**values, "hidden_size": 32}), vocab_size=20, hidden_size=32)
    assert default.layers[0].w_mh.shape == (32, 32)
    for form in ("corrected", "printed"):
        cfg = make_config({**values, "hidden_size": 32, "multiplicative_form": form})
        model = LanguageModel(cfg, vocab_size=20, hidden_size=32)
        assert model.layers[0].w_mh.shape == (32, 16)  # layer 0 reads the 16-wide embedding (§5.1)
        assert model.layers[1].w_mh.shape == (32, 32)  # layer 1 reads the 32-wide layer below
    with pytest.raises(ValueError, match="multiplicative_form must be one of"):
        make_cell("mgru", M, N, multiplicative_form="typeset")
