"""The RecurrentCell contract, checked for every registered cell (trainer/cells/base.py)."""

from __future__ import annotations

import pytest
import torch

from trainer.cells import CELLS, make_cell

T, B, M, N = 5, 3, 6, 4
GRU_CELLS = {"mgru", "tmgru"}
# Each case: (cell setting, mogrifier rounds). `rlstm` with rounds > 0 is the Mogrifier RLSTM.
CASES = {name: (name, 3) for name in CELLS} | {"rlstm": ("rlstm", 0), "mogrifier_rlstm": ("rlstm", 3)}


def build(name: str, seed: int = 0, rounds: int | None = None, rank: int = 2) -> torch.nn.Module:
    torch.manual_seed(seed)
    cell, default_rounds = CASES[name]
    rounds = default_rounds if rounds is None else min(rounds, default_rounds)
    return make_cell(cell, M, N, t_max=12.0, mogrifier_rounds=rounds, mogrifier_rank=rank)


def random_state(cell, batch: int = B) -> tuple[torch.Tensor, ...]:
    return tuple(torch.randn_like(s) for s in cell.zero_state(batch, "cpu", torch.float64))


def inputs(steps: int = T, batch: int = B) -> torch.Tensor:
    return torch.randn(steps, batch, M, dtype=torch.float64)


@pytest.fixture(params=sorted(CASES))
def name(request) -> str:
    return request.param


def test_registry_names_and_unknown_name():
    assert set(CELLS) == {"lstm", "mogrifier_lstm", "rlstm", "mlstm", "tmlstm", "mgru", "tmgru"}
    with pytest.raises(ValueError, match="cell must be one of"):
        make_cell("gru", M, N)


def test_zero_state(name):
    cell = build(name).double()
    state = cell.zero_state(B, "cpu", torch.float64)
    assert len(state) == (1 if name in GRU_CELLS else 2)  # (h,) for GRUs, (h, c) otherwise
    for s in state:
        assert s.shape == (B, N) and s.dtype == torch.float64 and not s.any()


def test_shapes(name):
    cell = build(name).double()
    torch.manual_seed(1)
    h_seq, state = cell(inputs(), random_state(cell))
    assert h_seq.shape == (T, B, N)
    assert [s.shape for s in state] == [s.shape for s in cell.zero_state(B, "cpu", torch.float64)]
    assert torch.equal(h_seq[-1], state[0])  # the last output is the new h


def test_gradients_reach_every_parameter(name):
    cell = build(name).double()
    torch.manual_seed(1)
    mask = torch.rand(B, N, dtype=torch.float64) * 2
    h_seq, state = cell(inputs(), random_state(cell), mask)
    (h_seq.square().sum() + sum(s.sum() for s in state)).backward()
    for pname, p in cell.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, pname


def test_state_mask_is_the_same_at_every_step(name):
    """A window run at once equals the same steps run one at a time with the one mask."""
    cell = build(name).double()
    torch.manual_seed(1)
    x, state = inputs(), random_state(cell)
    mask = (torch.rand(B, N, dtype=torch.float64) > 0.4).double() / 0.6
    whole, whole_state = cell(x, state, mask)
    outs = []
    for t in range(T):
        h, state = cell(x[t : t + 1], state, mask)
        outs.append(h)
    torch.testing.assert_close(torch.cat(outs), whole, rtol=0, atol=1e-12)
    for a, b in zip(state, whole_state):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_state_mask_changes_outputs_and_ones_mask_is_none(name):
    cell = build(name).double()
    torch.manual_seed(1)
    x, state = inputs(), random_state(cell)
    plain, _ = cell(x, state)
    ones, _ = cell(x, state, torch.ones(B, N, dtype=torch.float64))
    masked, _ = cell(x, state, (torch.rand(B, N, dtype=torch.float64) > 0.5).double() * 2)
    torch.testing.assert_close(ones, plain, rtol=0, atol=0)
    assert not torch.allclose(masked, plain)


def test_zero_mask_cuts_h_prev_out_of_the_recurrence(name):
    """With M^state = 0, h_prev reaches the first output only through a GRU's carry (1-z) ⊙ h_prev."""
    cell = build(name).double()
    torch.manual_seed(1)
    x1, (h0, *rest) = inputs(steps=1), random_state(cell)
    zero = torch.zeros(B, N, dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(lambda h: cell(x1, (h, *rest), zero)[0][0], h0)
    jac = jac.reshape(B * N, B * N)
    off_diagonal = jac - torch.diag(torch.diagonal(jac))
    assert off_diagonal.abs().max() == 0
    if name in GRU_CELLS:
        assert torch.diagonal(jac).abs().min() > 0  # the carry still holds h_prev
    else:
        assert jac.abs().max() == 0
    unmasked = torch.autograd.functional.jacobian(lambda h: cell(x1, (h, *rest))[0][0], h0)
    unmasked = unmasked.reshape(B * N, B * N)
    assert (unmasked - torch.diag(torch.diagonal(unmasked))).abs().max() > 0


def test_deterministic(name):
    a, b = build(name, seed=3).double(), build(name, seed=3).double()
    for (pa_name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(pa, pb), pa_name
    torch.manual_seed(1)
    x, state = inputs(), random_state(a)
    torch.testing.assert_close(a(x, state)[0], a(x, state)[0], rtol=0, atol=0)
    torch.testing.assert_close(a(x, state)[0], b(x, state)[0], rtol=0, atol=0)


def test_batch_elements_are_independent(name):
    cell = build(name).double()
    torch.manual_seed(1)
    x, state = inputs(), random_state(cell)
    mask = torch.rand(B, N, dtype=torch.float64) * 2
    full, _ = cell(x, state, mask)
    x2 = x.clone()
    x2[:, 1:] = torch.randn_like(x2[:, 1:])
    state2 = tuple(torch.cat([s[:1], torch.randn_like(s[1:])]) for s in state)
    mask2 = torch.cat([mask[:1], torch.rand(B - 1, N, dtype=torch.float64)])
    changed, _ = cell(x2, state2, mask2)
    torch.testing.assert_close(changed[:, 0], full[:, 0], rtol=0, atol=1e-14)
    assert not torch.allclose(changed[:, 1:], full[:, 1:])
    alone, _ = cell(x[:, :1], tuple(s[:1] for s in state), mask[:1])
    torch.testing.assert_close(alone[:, 0], full[:, 0], rtol=0, atol=1e-12)


def test_exact_gradients(name):
    """Autograd through the cell (with its batched weight gradients) matches finite differences."""
    cell = build(name).double()
    torch.manual_seed(1)
    x = inputs(steps=3, batch=2).requires_grad_()
    state = tuple(s.requires_grad_() for s in random_state(cell, batch=2))
    mask = torch.rand(2, N, dtype=torch.float64) * 2
    names = [n for n, _ in cell.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in cell.parameters())

    def run(x, *args):
        st, ps = args[: len(state)], args[len(state) :]
        h_seq, new_state = torch.func.functional_call(cell, dict(zip(names, ps)), (x, st, mask))
        return (h_seq, *new_state)

    assert torch.autograd.gradcheck(run, (x, *state, *params))


def test_runs_without_grad_and_in_float32(name):
    cell = build(name, rounds=2, rank=0)
    with torch.no_grad():
        h_seq, _ = cell(torch.randn(T, B, M), cell.zero_state(B, "cpu", torch.float32))
    assert h_seq.dtype == torch.float32 and torch.isfinite(h_seq).all() and not h_seq.requires_grad
