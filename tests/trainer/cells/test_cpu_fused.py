"""The fused (Mogrifier) LSTM Function gives the same results whatever its chunk of time steps."""

from __future__ import annotations

import pytest
import torch

from trainer.cells import cpu_fused, cpu_onednn, make_cell

T, B, M, N = 7, 3, 5, 4


@pytest.mark.parametrize(("name", "rounds", "rank"), [("lstm", 0, 0), ("mogrifier_lstm", 3, 2)])
def test_chunked_steps_match_one_chunk(monkeypatch, name, rounds, rank):
    torch.manual_seed(0)
    cell = make_cell(name, M, N, mogrifier_rounds=rounds, mogrifier_rank=rank).double()
    x = torch.randn(T, B, M, dtype=torch.float64, requires_grad=True)
    state = (torch.randn(B, N, dtype=torch.float64), torch.randn(B, N, dtype=torch.float64))
    mask = torch.rand(B, N, dtype=torch.float64) * 2
    readout = torch.randn(T, B, N, dtype=torch.float64)
    results = []
    for chunk_steps in (T, 3, 1):  # one chunk; chunks of 3 with a partial last one; single steps
        monkeypatch.setattr(cpu_fused, "CHUNK_BYTES", chunk_steps * B * 4 * N * 8)
        assert cpu_fused._chunk_steps(T, B, 4 * N, 8) == chunk_steps
        cell.zero_grad()
        x.grad = None
        h_seq, (_h, c) = cell(x, state, mask)
        ((h_seq * readout).sum() + c.sum()).backward()
        results.append([h_seq.detach(), x.grad.clone()] + [p.grad.clone() for p in cell.parameters()])
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_gradcheck_with_small_chunks(monkeypatch):
    monkeypatch.setattr(cpu_fused, "CHUNK_BYTES", 2 * 2 * 4 * N * 8)  # two steps per chunk
    torch.manual_seed(0)
    cell = make_cell("lstm", M, N).double()
    x = torch.randn(5, 2, M, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(2, N, dtype=torch.float64, requires_grad=True)
    c0 = torch.randn(2, N, dtype=torch.float64, requires_grad=True)
    names = [n for n, _ in cell.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in cell.parameters())

    def run(x, h0, c0, *ps):
        h_seq, (h, c) = torch.func.functional_call(cell, dict(zip(names, ps)), (x, (h0, c0)))
        return h_seq, h, c

    assert torch.autograd.gradcheck(run, (x, h0, c0, *params))


def test_non_contiguous_input():
    torch.manual_seed(0)
    cell = make_cell("lstm", M, N).double()
    x = torch.randn(B, T, M, dtype=torch.float64).transpose(0, 1).requires_grad_()  # [T, B, M] view
    state = cell.zero_state(B, "cpu", torch.float64)
    h_seq, _ = cell(x, state)
    h_seq.sum().backward()
    x2 = x.detach().contiguous().requires_grad_()
    h_seq2, _ = cell(x2, state)
    h_seq2.sum().backward()
    torch.testing.assert_close(h_seq, h_seq2, rtol=0, atol=1e-14)
    torch.testing.assert_close(x.grad, x2.grad, rtol=0, atol=1e-14)


@pytest.mark.skipif(not cpu_onednn._probe(), reason="this torch build has no usable oneDNN linear op")
@pytest.mark.parametrize(
    ("name", "rounds", "rank"), [("lstm", 0, 0), ("mogrifier_lstm", 3, 2), ("mogrifier_lstm", 2, 0)]
)
def test_onednn_products_match_torch_mm(monkeypatch, name, rounds, rank):
    """In float32 the layer runs its products through oneDNN; results match the torch.mm path."""
    torch.manual_seed(0)
    cell = make_cell(name, M, N, mogrifier_rounds=rounds, mogrifier_rank=rank)
    x = torch.randn(T, B, M, requires_grad=True)
    state = (torch.randn(B, N), torch.randn(B, N))
    mask = torch.rand(B, N) * 2
    readout = torch.randn(T, B, N)
    results = []
    for enabled in (True, False):
        monkeypatch.setattr(cpu_onednn, "ENABLED", enabled)
        assert cpu_onednn.available(x) == enabled
        cell.zero_grad()
        x.grad = None
        h_seq, (_, c) = cell(x, state, mask)
        ((h_seq * readout).sum() + c.sum()).backward()
        results.append([h_seq.detach(), x.grad.clone()] + [p.grad.clone() for p in cell.parameters()])
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
