"""`precision`: bf16 autocast against float32 on CPU for every cell, and what a run stores.

Stated tolerance (bfloat16 keeps 8 bits of mantissa, about 0.4% per rounding): on one window of
the model, the loss within 1% relative; the whole gradient (every parameter's, concatenated) within
cosine similarity 0.99 and 5% in norm of float32's; and each parameter's gradient within 10% of its
own norm or 1e-4 of the whole gradient's, whichever is larger (a gradient a thousand times smaller
than the rest, like a second layer's W^fu at initialisation, is below bfloat16's resolution of
it). The carried state and the loss stay float32 under bf16.
"""

from __future__ import annotations

import pytest
import torch

from tests.trainer.corpora import write_ptb
from trainer import make_config, train
from trainer.cells import CELLS
from trainer.device import autocast
from trainer.model import LanguageModel
from trainer.objective import multi_sample_log_likelihood


def one_window(name: str, precision: str):
    """Loss, carried state and gradients of one training window of a small model of cell `name`."""
    cfg = make_config(
        {"cell": name, "hidden_size": 24, "num_layers": 2, "state_dropout": 0.2, "precision": precision}
    )
    torch.manual_seed(0)
    model = LanguageModel(cfg, vocab_size=50, hidden_size=24)
    model.train()
    tokens = torch.randint(0, 50, (9, 4), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(2)  # the same dropout masks in both precisions
    with autocast(cfg, torch.device("cpu")):
        logits, state = model(tokens[:-1], model.zero_state(4))
    loss = -multi_sample_log_likelihood(logits.float(), tokens[1:], 1).mean()
    loss.backward()
    return loss, state, {n: p.grad for n, p in model.named_parameters()}


@pytest.mark.parametrize("name", sorted(CELLS))
def test_bf16_autocast_stays_within_the_stated_tolerance_of_fp32(name):
    loss32, _, grads32 = one_window(name, "fp32")
    loss16, _, grads16 = one_window(name, "bf16")
    assert loss16.dtype == torch.float32
    assert abs(loss16.item() - loss32.item()) <= 0.01 * abs(loss32.item())
    whole32 = torch.cat([g.flatten() for g in grads32.values()])
    whole16 = torch.cat([grads16[n].flatten() for n in grads32])
    assert all(g.dtype == torch.float32 for g in grads16.values())
    assert torch.nn.functional.cosine_similarity(whole16, whole32, dim=0).item() >= 0.99
    assert abs(whole16.norm() / whole32.norm() - 1) <= 0.05
    for n, g32 in grads32.items():
        error = (grads16[n] - g32).norm().item()
        assert error <= max(0.1 * g32.norm().item(), 1e-4 * whole32.norm().item()), (
            n,
            error,
            g32.norm().item(),
        )


def test_a_bf16_run_trains_carries_float32_state_and_stores_its_precision(tmp_path):
    base = {
        "dataset": "ptb",
        "data_dir": str(write_ptb(tmp_path / "data")),
        "cell": "mogrifier_lstm",
        "mogrifier_rounds": 2,
        "hidden_size": 16,
        "batch_size": 8,
        "bptt": 10,
        "eval_every": 15,
        "max_steps": 30,
        "seed": 1,
    }
    runs = {
        p: train(make_config({**base, "precision": p, "run_dir": str(tmp_path / p)}))
        for p in ("fp32", "bf16")
    }
    assert abs(runs["bf16"].best_val_loss - runs["fp32"].best_val_loss) <= 0.02 * runs["fp32"].best_val_loss
    checkpoint = torch.load(tmp_path / "bf16" / "last.pt", weights_only=False)
    assert checkpoint["config"]["precision"] == "bf16"
    assert all(t.dtype == torch.float32 for s in checkpoint["carried_state"] for t in s)
    with pytest.raises(ValueError, match="precision"):
        make_config({**base, "precision": "fp16"})
