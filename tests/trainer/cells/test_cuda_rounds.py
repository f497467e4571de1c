"""The fused Mogrifier rounds (cuda_rounds.py): one Triton kernel per step against the eager cells.

Without a GPU the kernels run in Triton's interpreter on CPU tensors in float32 (TRITON_INTERPRET=1,
set below before Triton is first imported); `make test-gpu` runs the same comparisons compiled on
CUDA in fp32, tf32 and bf16. Every case checks the outputs and every gradient (x, the carried
state, the LSTM's and each round's weights) against the cell's own eager forward.
"""

from __future__ import annotations

import ast
import inspect
import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from trainer.cells import cuda_graphs, cuda_rounds, cuda_windows, fallback, make_cell, paths
from trainer.config import make_config

T, B, M, N, RANK = 3, 5, 7, 9, 3
CASES = [
    (cell, rounds, rank) for cell in ("mogrifier_lstm", "rlstm") for rounds in range(7) for rank in (0, RANK)
]


def build(name, rounds, rank, m=M, n=N, kernel="fused", device="cpu"):
    torch.manual_seed(0)
    cell = make_cell(
        name, m, n, t_max=12.0, mogrifier_rounds=rounds, mogrifier_rank=rank, mogrifier_kernel=kernel
    )
    return cell.to(device)


def inputs(masked, b=B, m=M, n=N, device="cpu", seed=1):
    torch.manual_seed(seed)
    x = torch.randn(T, b, m, device=device, requires_grad=True)
    state = (
        torch.randn(b, n, device=device, requires_grad=True),
        torch.randn(b, n, device=device, requires_grad=True),
    )
    mask = ((torch.rand(b, n, device=device) > 0.3).float() / 0.7) if masked else None
    return x, state, mask, torch.randn(T, b, n, device=device)


def outputs_and_grads(run, cell, x, state, mask, readout):
    cell.zero_grad()
    for t in (x, *state):
        t.grad = None
    h_seq, (h, c) = run(x, state, mask)
    ((h_seq * readout).sum() + 0.7 * c.sum() + 0.3 * h.square().sum()).backward()
    grads = [x.grad, *(s.grad for s in state), *(p.grad for p in cell.parameters())]
    assert all(g is not None for g in grads)
    return [h_seq.detach(), h.detach(), c.detach(), *(g.clone() for g in grads)]


def fused_window(cell):
    assert cell.fused_rounds == (getattr(cell, "rounds", 0) > 0)
    return lambda x, state, mask: cuda_graphs.window_call(cell, cuda_windows.PLAIN, x, state, mask)


def assert_all_close(expected, got, tol):
    for k, (a, b) in enumerate(zip(expected, got, strict=True)):
        torch.testing.assert_close(b, a, rtol=tol, atol=tol, msg=lambda m, k=k: f"output/gradient {k}: {m}")


@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
@pytest.mark.parametrize(("name", "rounds", "rank"), CASES)
def test_fused_rounds_match_the_eager_cell(name, rounds, rank, masked):
    cell = build(name, rounds, rank)
    x, state, mask, readout = inputs(masked)
    expected = outputs_and_grads(cell.own_forward, cell, x, state, mask, readout)
    got = outputs_and_grads(fused_window(cell), cell, x, state, mask, readout)
    assert_all_close(expected, got, 2e-5)


@pytest.mark.parametrize(
    ("name", "rounds", "rank", "b", "m", "n"),
    [
        ("mogrifier_lstm", 5, 40, 19, 37, 70),  # two programs of 16 rows, a rank past one 32-wide chunk
        ("rlstm", 6, 0, 17, 70, 33),  # full rank wider than one 64-wide output chunk, x wider than h
        ("mogrifier_lstm", 4, 1, 1, 1, 2),  # rank 1, one row, one input unit
    ],
)
def test_odd_sizes_past_one_block(name, rounds, rank, b, m, n):
    cell = build(name, rounds, rank, m=m, n=n)
    x, state, mask, readout = inputs(True, b=b, m=m, n=n)
    expected = outputs_and_grads(cell.own_forward, cell, x, state, mask, readout)
    got = outputs_and_grads(fused_window(cell), cell, x, state, mask, readout)
    assert_all_close(expected, got, 5e-5)


def test_no_grad_forward_matches():
    cell = build("mogrifier_lstm", 3, RANK)
    x, state, mask, _ = inputs(True)
    with torch.no_grad():
        expected, _ = cell.own_forward(x, state, mask)
        got, _ = fused_window(cell)(x, state, mask)
    torch.testing.assert_close(got, expected, rtol=2e-5, atol=2e-5)


def test_the_cell_routes_training_through_the_fused_rounds_and_counts_it(monkeypatch):
    """Under the test switch the CPU takes CUDA's decisions: the compiled path (its steps left plain
    here, Inductor takes a minute on CPU) with the fused rounds, counted as such."""
    monkeypatch.setenv(fallback.FORCE_ON_CPU_ENV, "1")
    monkeypatch.setattr(cuda_graphs, "compiled_steps", lambda: cuda_windows.PLAIN)
    fallback.reset()
    cell = build("rlstm", 3, RANK)
    x, state, mask, readout = inputs(True)
    expected = outputs_and_grads(cell.own_forward, cell, x, state, mask, readout)
    paths.begin_run()
    got = outputs_and_grads(cell, cell, x, state, mask, readout)
    assert_all_close(expected, got, 2e-5)
    assert paths.counts() == {"compiled+fused_rounds": 1}
    assert paths.path_used(on_cuda=False, forced_on_cpu=True) == "compiled"
    fallback.reset()


def test_products_are_float32_unless_precision_asks():
    """tl.dot defaults to TF32 on Ampere and later: fp32 must be IEEE float32 unless precision says."""
    assert cuda_rounds.dot_precision(None, allow_tf32=False) == "ieee"
    assert cuda_rounds.dot_precision(None, allow_tf32=True) == "tf32"
    assert cuda_rounds.dot_precision(torch.bfloat16, allow_tf32=False) == "bf16"
    assert cuda_rounds.dot_precision(torch.float16, allow_tf32=False) == "ieee"
    cell = build("mogrifier_lstm", 2, RANK)
    _, config, params = cell.fast_window()
    assert cuda_rounds.FusedRounds(config, params[3:], M, N, torch.device("cpu")).precision == "ieee"


def test_every_product_in_the_kernels_names_its_precision():
    """Each tl.dot call passes input_precision, so none falls back to Triton's TF32 default."""
    tree = ast.parse(inspect.getsource(cuda_rounds.kernels()))
    dots = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dot"
    ]
    assert dots, "no tl.dot found"
    assert all(any(k.arg == "input_precision" for k in node.keywords) for node in dots)


def test_layout_packs_each_rounds_tensors_in_gate_order():
    # Round 1 (Q: h→x, 9→7) low rank 3; round 2 (R: x→h, 7→9) full; round 3 (Q) low rank 3.
    rows = cuda_rounds.layout((3, 0, 3), M, N)
    assert rows[0] == (0, 27, 27 + 21, 3)  # w_in [9, 3] at 0, w_out [3, 7] at 27, bias [7] at 48
    assert rows[1] == (55, 55, 55 + 63, 0)  # weight [7, 9] at 55, bias [9] at 118
    assert rows[2] == (127, 127 + 27, 127 + 48, 3)
    cell = build("mogrifier_lstm", 3, RANK)
    _, config, params = cell.fast_window()
    assert config == (3, 3, 3)
    packed = cuda_rounds.FusedRounds(config, params[3:], M, N, torch.device("cpu")).weights
    assert packed.numel() == sum(p.numel() for p in params[3:])


def test_the_setting_reaches_every_layer_and_is_checked():
    cfg = make_config({"hidden_size": 8, "cell": "mogrifier_lstm", "mogrifier_kernel": "fused"})
    from trainer.model import LanguageModel

    model = LanguageModel(cfg, vocab_size=11, hidden_size=8)
    assert [layer.fused_rounds for layer in model.layers] == [True, True]
    with pytest.raises(
        ValueError, match="mogrifier_kernel fused runs on the compiled and graphed CUDA paths"
    ):
        make_config({"hidden_size": 8, "mogrifier_kernel": "fused", "cuda_path": "eager"})
    with pytest.raises(ValueError, match="mogrifier_kernel"):
        make_config({"hidden_size": 8, "mogrifier_kernel": "triton"})
    with pytest.raises(ValueError, match="mogrifier_kernel must be one of"):
        make_cell("rlstm", M, N, mogrifier_kernel="triton")  # type: ignore[arg-type]


# --- on CUDA (`make test-gpu`): the compiled kernels, in the three precisions ---


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16"])
@pytest.mark.parametrize(
    ("name", "rounds", "rank"), [("mogrifier_lstm", 5, 0), ("mogrifier_lstm", 5, 50), ("rlstm", 5, 50)]
)
def test_fused_graphs_match_the_torch_rounds_on_cuda(name, rounds, rank, precision):
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    try:
        torch_cell = build(name, rounds, rank, m=96, n=80, kernel="torch", device="cuda")
        fused_cell = build(name, rounds, rank, m=96, n=80, kernel="fused", device="cuda")
        for seed in (1, 2, 3):  # the first call captures, later ones replay
            x, state, mask, readout = inputs(seed != 2, b=24, m=96, n=80, device="cuda", seed=seed)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
                expected = outputs_and_grads(torch_cell, torch_cell, x, state, mask, readout)
                got = outputs_and_grads(fused_cell, fused_cell, x, state, mask, readout)
            assert_all_close(expected, got, {"fp32": 1e-4, "tf32": 2e-2, "bf16": 6e-2}[precision])
        assert cuda_graphs._CAPTURES[fused_cell]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
