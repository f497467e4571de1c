"""The fast CUDA path (cuda_graphs.py, cuda_windows.py): its mathematics on CPU, and on CUDA the graphs.

The CPU tests run the very window functions the graphed path captures, with the plain pointwise
steps (and once with the torch.compile'd ones), against the cells' reference forward and backward
in float64. The `gpu` tests need CUDA (`make test-gpu`); without it they fail (tests/conftest.py).
"""

from __future__ import annotations

import warnings

import pytest
import torch

from trainer.cells import cuda_graphs, cuda_windows, make_cell, paths, route
from trainer.config import TrainConfig, make_config
from trainer.model import LanguageModel

T, B, M, N, RANK = 4, 3, 5, 4, 2
# (cell setting, Mogrifier rounds, rank): every cell in scope, rounds 0 to 6, full rank and rank k.
CASES = [("lstm", 0, 0)] + [
    (cell, rounds, rank) for cell in ("mogrifier_lstm", "rlstm") for rounds in range(7) for rank in (0, RANK)
]


def build(name: str, rounds: int, rank: int, cuda_path: paths.CudaPath = "auto", seed: int = 0):
    torch.manual_seed(seed)
    return make_cell(
        name, M, N, t_max=12.0, mogrifier_rounds=rounds, mogrifier_rank=rank, cuda_path=cuda_path
    )


def outputs_and_grads(run, cell, x, state, mask, readout):
    """h_seq, h_T, c_T and the gradients of a loss reading all three, for x, the state and every weight."""
    cell.zero_grad()
    for t in (x, *state):
        t.grad = None
    h_seq, (h, c) = run(cell, x, state, mask)
    ((h_seq * readout).sum() + 0.7 * c.sum() + 0.3 * h.square().sum()).backward()
    grads = [x.grad, *(s.grad for s in state)] + [p.grad for p in cell.parameters()]
    assert all(g is not None for g in grads)
    return [h_seq.detach(), h.detach(), c.detach(), *grads]


def random_inputs(masked: bool, device: str = "cpu", dtype: torch.dtype = torch.float64, seed: int = 1):
    """x, a carried (nonzero) state that requires grad, a dropout-style state mask or None, a readout."""
    torch.manual_seed(seed)
    kw = {"device": device, "dtype": dtype}
    x = torch.randn(T, B, M, **kw).requires_grad_()
    state = (torch.randn(B, N, **kw).requires_grad_(), torch.randn(B, N, **kw).requires_grad_())
    mask = (torch.rand(B, N, **kw) > 0.3).to(dtype) / 0.7 if masked else None
    return x, state, mask, torch.randn(T, B, N, **kw)


def reference(cell, x, state, mask):
    return cell(x, state, mask)


def plain_window(cell, x, state, mask):
    return cuda_graphs.window_call(cell, cuda_windows.PLAIN, x, state, mask)


@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
@pytest.mark.parametrize(("name", "rounds", "rank"), CASES)
def test_window_math_matches_reference_cell(name, rounds, rank, masked):
    cell = build(name, rounds, rank).double()
    x, state, mask, readout = random_inputs(masked)
    expected = outputs_and_grads(reference, cell, x, state, mask, readout)
    got = outputs_and_grads(plain_window, cell, x, state, mask, readout)
    for a, b in zip(expected, got, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.slow  # Inductor's first CPU compilation takes about a minute on 2 cores
@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch.jit")  # raised inside torch.compile on CPU
def test_window_math_with_the_compiled_steps():
    """The torch.compile'd pointwise steps (what CUDA runs) give the plain steps' results."""
    cell = build("mogrifier_lstm", 2, RANK).double()
    x, state, mask, readout = random_inputs(masked=True)

    def compiled(cell, x, state, mask):
        return cuda_graphs.window_call(cell, cuda_windows.compiled_steps(), x, state, mask)

    expected = outputs_and_grads(reference, cell, x, state, mask, readout)
    got = outputs_and_grads(compiled, cell, x, state, mask, readout)
    for a, b in zip(expected, got, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-12)


def test_window_gradcheck():
    """The window's autograd backward matches finite differences (Mogrifier RLSTM, low rank, masked)."""
    cell = build("rlstm", 3, RANK).double()
    torch.manual_seed(2)
    x = torch.randn(3, 2, M, dtype=torch.float64, requires_grad=True)
    h0, c0 = (torch.randn(2, N, dtype=torch.float64, requires_grad=True) for _ in range(2))
    mask = torch.rand(2, N, dtype=torch.float64) * 2
    window, config, params = cell.fast_window()
    leaves = tuple(p.detach().clone().requires_grad_() for p in params)

    def run(x, h0, c0, *ps):
        return window(cuda_windows.PLAIN, config, x, h0, c0, mask, *ps)

    assert torch.autograd.gradcheck(run, (x, h0, c0, *leaves))


@pytest.mark.parametrize(
    ("name", "rounds", "rank"),
    [("lstm", 0, 0), ("mogrifier_lstm", 3, RANK), ("rlstm", 0, 0), ("rlstm", 3, 0)],
)
def test_window_under_bf16_autocast(name, rounds, rank):
    """Mixed float32/bfloat16 operands (the batched weight gradients included) work and stay close."""
    cell = build(name, rounds, rank)
    x, state, mask, readout = random_inputs(masked=True, dtype=torch.float32)
    expected = outputs_and_grads(plain_window, cell, x, state, mask, readout)

    def autocast(cell, x, state, mask):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return plain_window(cell, x, state, mask)

    got = outputs_and_grads(autocast, cell, x, state, mask, readout)
    for a, b in zip(expected, got, strict=True):
        assert b.dtype == a.dtype
        torch.testing.assert_close(b, a, rtol=0.05, atol=0.05)


def test_cpu_never_takes_the_graphed_path(monkeypatch):
    def refuse(*args):
        raise AssertionError("graphed.run called on CPU")

    monkeypatch.setattr(cuda_graphs, "run", refuse)
    for name, rounds, rank in [("lstm", 0, 0), ("mogrifier_lstm", 3, RANK), ("rlstm", 0, 0), ("rlstm", 3, 0)]:
        cell = build(name, rounds, rank)
        x, state = torch.randn(T, B, M), cell.zero_state(B, "cpu", torch.float32)
        assert cell.cuda_path == "auto" and route.facts(cell, x, state, None).on_cuda is False
        paths.begin_run()
        h_seq, _ = cell(x, state)
        h_seq.sum().backward()
        assert paths.counts() == {"cpu": 1}


def test_cuda_path_setting():
    assert TrainConfig(hidden_size=8).cuda_path == "auto"
    cfg = make_config({"hidden_size": 8, "cuda_path": "eager", "cell": "rlstm"})
    model = LanguageModel(cfg, vocab_size=11, hidden_size=8)
    assert [cell.cuda_path for cell in model.layers] == ["eager", "eager"]
    with pytest.raises(ValueError, match="cuda_path"):
        make_config({"hidden_size": 8, "cuda_path": "fast"})
    with pytest.raises(ValueError, match="cuda_path must be one of"):
        make_cell("lstm", M, N, cuda_path="fast")  # type: ignore[arg-type]
    assert not hasattr(make_cell("mgru", M, N, cuda_path="eager"), "cuda_path")


# --- on CUDA (`make test-gpu`) ---

GPU_CASES = [
    ("lstm", 0, 0),
    ("mogrifier_lstm", 5, 0),
    ("mogrifier_lstm", 5, RANK),
    ("rlstm", 0, 0),
    ("rlstm", 5, 0),
    ("rlstm", 5, RANK),
]


@pytest.fixture
def no_tf32():
    """Float32 products in full precision, so that eager and graphed runs compare closely."""
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = saved


@pytest.mark.gpu
@pytest.mark.usefixtures("no_tf32")
@pytest.mark.parametrize(("name", "rounds", "rank"), GPU_CASES)
def test_graphed_matches_eager_on_cuda(name, rounds, rank):
    eager = build(name, rounds, rank, cuda_path="eager").cuda()
    fast = build(name, rounds, rank, cuda_path="graphs").cuda()
    for seed in (1, 2, 3):  # the first call captures; later ones replay with new inputs
        x, state, mask, readout = random_inputs(seed != 2, "cuda", torch.float32, seed)
        expected = outputs_and_grads(reference, eager, x, state, mask, readout)
        got = outputs_and_grads(reference, fast, x, state, mask, readout)
        for a, b in zip(expected, got, strict=True):
            torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)
    assert len(cuda_graphs._CAPTURES[fast]) == 2  # one capture with a mask, one without


@pytest.mark.gpu
def test_a_capture_leaves_no_stale_stream_to_autograd():
    """The warm-up's leaves are its own: torch 2.11 warned once per capture that a gradient node
    kept the warm-up's stream (torch 2.13 documents that as failing the capture); none may now."""
    fast = build("mogrifier_lstm", 3, RANK, cuda_path="graphs").cuda()
    x, state, mask, readout = random_inputs(True, "cuda", torch.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs_and_grads(reference, fast, x, state, mask, readout)
    assert cuda_graphs._CAPTURES[fast]  # captured, not fallen back
    assert not [w for w in caught if "AccumulateGrad" in str(w.message)], [str(w.message) for w in caught]


@pytest.mark.gpu
def test_second_forward_before_backward_runs_eagerly():
    """Two windows through one layer before one backward (shared static buffers) stay correct."""
    eager = build("mogrifier_lstm", 3, RANK, cuda_path="eager").cuda()
    fast = build("mogrifier_lstm", 3, RANK, cuda_path="graphs").cuda()
    x, state, mask, _ = random_inputs(masked=True, device="cuda", dtype=torch.float32)
    results = []
    for cell in (eager, fast):
        first, mid = cell(x, state, mask)
        second, _ = cell(x.flip(0), mid, mask)
        (first.sum() + 2 * second.sum()).backward()
        results.append([first, second, x.grad.clone(), *(p.grad for p in cell.parameters())])
        x.grad = None
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("cell", ["lstm", "mogrifier_lstm", "rlstm"])
def test_training_step_under_bf16_autocast(cell):
    cfg = make_config({"hidden_size": 32, "cell": cell, "mogrifier_rank": 4, "state_dropout": 0.2})
    torch.manual_seed(0)
    model = LanguageModel(cfg, vocab_size=50, hidden_size=32).cuda().train()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    tokens = torch.randint(50, (17, 8), device="cuda")
    for _ in range(3):  # capture, then replays
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits, _ = model(tokens[:-1], model.zero_state(8))
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), tokens[1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        assert torch.isfinite(loss)
        assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
        optimizer.step()
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert any(cuda_graphs._CAPTURES.get(layer) for layer in model.layers)
