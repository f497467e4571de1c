"""`test_streams: one`: the test split read as one continuous stream, as lamb's final test reads it."""

from __future__ import annotations

import pytest
import torch

from trainer import loop, make_config
from trainer.data import batchify
from trainer.evaluate import evaluate
from trainer.model import LanguageModel
from trainer.objective import token_log_likelihood


def carrying_model() -> LanguageModel:
    """Large recurrent weights: the state carries the past, so where a stream starts matters."""
    cfg = make_config({"hidden_size": 8, "num_layers": 1})
    torch.manual_seed(0)
    model = LanguageModel(cfg, vocab_size=7, hidden_size=8).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.9)
    return model


@torch.no_grad()
def one_pass(model: LanguageModel, ids: torch.Tensor) -> float:
    """The reference: every token predicted from the whole text before it, one step at a time."""
    state = model.zero_state(1)
    total = 0.0
    for t in range(ids.numel() - 1):
        features, state = model.features(ids[t : t + 1].view(1, 1), state)
        total -= token_log_likelihood(
            model.scores(features).log_probs(), ids[t + 1 : t + 2].view(1, 1)
        ).item()
    return total / (ids.numel() - 1)


def test_one_stream_is_the_continuous_reading_and_differs_from_streams():
    """lamb/experiment/test.sh sets min_non_episodic_eval_examples_per_stripe=500000, so
    lamb/evaluation.py `eval_batch_size` = max(1, min(batch_size, dataset.size() // 500000)) = 1 and
    `evaluate_deterministic` feeds each batch's last_state to the next: one stream, its state carried
    over the whole split. One stream in windows equals the token-by-token reading; 4 streams, each
    from a zero state, do not."""
    model = carrying_model()
    ids = torch.randint(0, 7, (120,), generator=torch.Generator().manual_seed(2))
    one = evaluate(model, batchify(ids, 1), bptt=9)[0]
    assert one == pytest.approx(one_pass(model, ids), rel=1e-5)
    streamed = evaluate(model, batchify(ids, 4), bptt=9)[0]
    assert abs(streamed - one) > 1e-3


@pytest.mark.parametrize(("setting", "columns"), [("one", 1), ("batched", 5)])
def test_trainer_holds_the_test_split_as_configured(setting, columns, tmp_path):
    cfg = make_config(
        {"hidden_size": 8, "num_layers": 1, "eval_batch_size": 5}
        | {"test_streams": setting, "run_dir": str(tmp_path)}
    )
    trainer = loop.Trainer(cfg)
    assert trainer.test_data.shape[1] == columns
    assert trainer.test_data.numel() == trainer.corpus.test.numel() // columns * columns
    assert torch.equal(trainer.test_data.t().flatten(), trainer.corpus.test[: trainer.test_data.numel()])
