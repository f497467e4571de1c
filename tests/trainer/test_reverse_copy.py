"""The reverse copy task (Mogrifier paper §4.3): encoder–decoder, loss on the reversed half, accuracy."""

from __future__ import annotations

import json

import pytest
import torch

from trainer import ConfigError, load_checkpoint, make_config, train
from trainer.data import load_corpus
from trainer.model import ReverseCopyModel, build_model
from trainer.reverse_copy import (
    evaluate_examples,
    log_likelihood,
    logits_and_targets,
    train_batch,
)


def cfg(tmp_path, **kw):
    base = {
        "dataset": "reverse_copy",
        "reverse_copy_length": 3,
        "reverse_copy_vocab": 6,
        "hidden_size": 24,
        "num_layers": 1,
        "batch_size": 32,
        "learning_rate": 0.02,
        "optimizer": "adam",
        "max_steps": 200,
        "eval_every": 100,
        "max_eval_tokens": 1500,
        "eval_batch_size": 500,
        "run_dir": str(tmp_path / "run"),
    }
    return make_config({**base, **kw})


def test_encoder_decoder_with_loss_on_the_reversed_half_only(tmp_path):
    c = cfg(tmp_path, num_layers=2, cell="mogrifier_lstm", mogrifier_rounds=2)
    model = build_model(c, load_corpus(c).vocab_size)
    assert isinstance(model, ReverseCopyModel)
    assert model.encoder.out_bias is None and model.encoder.out_embedding is None  # no softmax on the source
    source = train_batch(c, 0)
    logits, target = logits_and_targets(model, source)
    assert torch.equal(target, source.t().flip(0))  # the targets are the reversed sequence, nothing else
    ll = log_likelihood(model, source)
    assert ll.shape == (3, 32)
    want = torch.log_softmax(logits, -1).gather(-1, target[..., None])[..., 0]
    torch.testing.assert_close(ll, want)
    # The decoder reads the marker, then the reversed tokens so far: y_1 depends on the source only.
    changed = source.clone()
    changed[:, 0] = (changed[:, 0] + 1) % 6  # x_1 is the last reversed token y_L
    logits2, _ = logits_and_targets(model, changed)
    assert not torch.allclose(logits2[0], logits[0])  # the encoder's state reaches the decoder


def test_reverse_copy_trains_without_dropout():
    for name in ("input_dropout", "state_dropout", "output_dropout", "cell_output_dropout"):
        with pytest.raises(ConfigError, match=name):
            make_config({"dataset": "reverse_copy", name: 0.1})
    with pytest.raises(ConfigError, match="reverse_copy_length"):
        make_config({"dataset": "reverse_copy", "reverse_copy_length": 0})


@pytest.mark.slow
def test_tiny_model_learns_short_sequences_and_reports_accuracy(tmp_path):
    c = cfg(tmp_path)
    seen = []
    result = train(c, report=seen.append)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["accuracy"] for r in rows] == [m["accuracy"] for m in seen]
    assert seen[-1]["accuracy"] >= 0.9 and result.test_accuracy >= 0.9
    # Teacher-forced sequence accuracy equals greedy decoding's: decode greedily by hand.
    model, _ = load_checkpoint(result.best_checkpoint)
    source = load_corpus(c).test[:300]
    with torch.no_grad():
        _, state = model.encoder.features(source.t(), model.encoder.zero_state(300))
        token, preds = torch.full((1, 300), model.vocab_size - 1), []
        for _ in range(3):
            logits, state = model.decoder(token, state)
            token = logits.argmax(-1)
            preds.append(token[0])
    greedy = (torch.stack(preds) == source.t().flip(0)).all(0).float().mean().item()
    assert evaluate_examples(model, source, 100)[1] == pytest.approx(greedy)


def test_evaluate_command_reports_sequence_accuracy(tmp_path, capsys):
    from tuner.cli import main

    result = train(cfg(tmp_path, max_steps=5, eval_every=5))
    assert main(["evaluate", result.best_checkpoint, "--split", "test", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["loss"] == pytest.approx(result.test_loss) and got["accuracy"] == result.test_accuracy
