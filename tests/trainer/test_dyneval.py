"""Dynamic evaluation (thesis §4.5, App. 2.A; Krause et al. 2018's RMS variant), trainer/dyneval.py."""

from __future__ import annotations

import itertools

import pytest
import torch

from tests.trainer.corpora import write_ptb_documents
from trainer import dyneval, load_checkpoint, make_config, train
from trainer import temperature as lamb_temperature
from trainer.data import batchify, load_corpus
from trainer.dyneval import (
    EVAL_BATCH_SIZE,
    STATS_BATCH_SIZE,
    GradientStatistics,
    dynamic_evaluate,
    dyneval_update,
    estimate_temperature,
    gradient_statistics,
    stats_batch_size,
)
from trainer.evaluate import evaluate
from trainer.model import LanguageModel
from trainer.temperature import LOGIT_MULTIPLIERS


def tiny_model(**kw) -> tuple[LanguageModel, object]:
    cfg = make_config({"hidden_size": 8, "num_layers": 2, "max_time_steps": 5, **kw})
    torch.manual_seed(0)
    return LanguageModel(cfg, vocab_size=11, hidden_size=8), cfg


def test_statistics_at_batch_1024_or_the_most_streams_the_data_has():
    """App. 2.A: the mean squared gradients are estimated at batch size 1024."""
    assert STATS_BATCH_SIZE == 1024 and EVAL_BATCH_SIZE == 1
    assert stats_batch_size(1_000_000, 20) == 1024
    assert stats_batch_size(2100, 20) == 100  # 100 streams of one 21-token window each
    assert stats_batch_size(10, 20) == 1
    model, cfg = tiny_model()
    stats = gradient_statistics(model, torch.randint(0, 11, (600,)), cfg)
    assert stats.batch_size == 100 and stats.windows == 1


def test_rms_decay_is_relative_to_the_mean_rms_and_capped_at_one():
    """Krause et al. 2018: λ_i = min(λ · RMS_i / mean_j RMS_j, 1); scale_i = 1/(RMS_i + ε)."""
    model, cfg = tiny_model(dyneval_decay_rate=0.02, dyneval_epsilon=1e-3)
    ids = torch.randint(0, 11, (3000,))
    stats = gradient_statistics(model, ids, cfg)
    rms = torch.cat([(1.0 / s - cfg.dyneval_epsilon).flatten() for s in stats.scale])
    decay = torch.cat([d.flatten() for d in stats.decay])
    # MS by hand: the same windows at the same batch size, g² averaged over windows.
    data = batchify(ids, stats.batch_size)
    params = list(model.parameters())
    ms = [torch.zeros_like(p) for p in params]
    state = model.zero_state(stats.batch_size)
    windows = 0
    for start in range(0, data.shape[0] - 1, cfg.max_time_steps):
        end = min(start + cfg.max_time_steps, data.shape[0] - 1)
        logits, state = model(data[start:end], state)
        loss = (
            -torch.log_softmax(logits, -1).gather(-1, data[start + 1 : end + 1, :, None]).sum()
            / stats.batch_size
        )
        for m, g in zip(ms, torch.autograd.grad(loss, params)):
            m += g * g
        state = [tuple(t.detach() for t in s) for s in state]
        windows += 1
    want_rms = torch.cat([(m / windows).sqrt().flatten() for m in ms])
    torch.testing.assert_close(rms, want_rms, rtol=1e-3, atol=1e-7)
    torch.testing.assert_close(
        decay, (0.02 * want_rms / want_rms.mean()).clamp(max=1.0), rtol=1e-3, atol=1e-8
    )
    assert decay.max() <= 1.0
    big = gradient_statistics(model, ids, make_config({**cfg.to_dict(), "dyneval_decay_rate": 0.9}))
    capped = torch.cat([d.flatten() for d in big.decay])
    assert capped.max() == 1.0 and capped.min() < 1.0  # capped, not saturated everywhere


def test_update_is_the_formula_for_every_tensor():
    torch.manual_seed(0)
    params = [torch.randn(3, 4), torch.randn(5)]
    theta0 = [torch.randn(3, 4), torch.randn(5)]
    grads = [torch.randn(3, 4), torch.randn(5)]
    stats = GradientStatistics(
        scale=[torch.rand(3, 4), torch.rand(5)],
        decay=[torch.rand(3, 4), torch.rand(5)],
        batch_size=1024,
        windows=1,
    )
    want = [
        p + d * (p0 - p) - 0.01 * g * s
        for p, p0, g, s, d in zip(params, theta0, grads, stats.scale, stats.decay)
    ]
    dyneval_update(params, grads, theta0, stats, 0.01)
    for got, w in zip(params, want):
        torch.testing.assert_close(got, w)


def test_stream_is_read_at_batch_one_and_weights_restored():
    model, cfg = tiny_model()
    seen = []
    model.layers[0].register_forward_pre_hook(lambda mod, args: seen.append(args[0].shape[1]))
    before = [p.detach().clone() for p in model.parameters()]
    stats = gradient_statistics(model, torch.randint(0, 11, (400,)), cfg)
    seen.clear()
    loss = dynamic_evaluate(model, torch.randint(0, 11, (50,)), stats, cfg)
    assert set(seen) == {1} and len(seen) == 10  # 49 predictions in windows of 5
    assert loss > 0
    for p, b in zip(model.parameters(), before):
        assert torch.equal(p, b)


def test_temperature_candidates_are_lambs_logit_multipliers():
    """lamb/evaluation.py with tune_dyneval.sh's eval_softmax_temperature=-0.8: 1.06 - 0.02 i, down to 0.8."""
    assert LOGIT_MULTIPLIERS[0] == 1.06 and LOGIT_MULTIPLIERS[-1] == 0.8 and len(LOGIT_MULTIPLIERS) == 14
    assert all(a - b == pytest.approx(0.02) for a, b in itertools.pairwise(LOGIT_MULTIPLIERS))
    assert (lamb_temperature.TEMPERATURE_TOKENS, dyneval.TEMPERATURE_BATCH_SIZE) == (50_000, 1024)


def test_temperature_search_stops_two_candidates_past_the_best(monkeypatch):
    """lamb stops when the best multiplier lies two candidates back: a better one later is never seen.
    The estimate reads the first 50,000 validation tokens in up to 1024 streams."""
    model, cfg = tiny_model(max_time_steps=5)
    losses = [5.0, 4.0, 3.0, 3.5, 3.6, 1.0, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1]
    shapes = []

    def fake_evaluate(model, data, bptt, temperatures):
        shapes.append((tuple(data.shape), bptt, tuple(temperatures)))
        return losses

    monkeypatch.setattr(lamb_temperature, "evaluate", fake_evaluate)
    assert estimate_temperature(model, torch.randint(0, 11, (1_000_000,)), cfg) == pytest.approx(1 / 1.02)
    assert shapes == [((50_000 // 1024 // 5 * 5 + 1, 1024), 5, tuple(1 / m for m in LOGIT_MULTIPLIERS))]
    losses[:] = [5.0 - 0.1 * i for i in range(14)]  # improving all the way: the last, 0.8
    assert estimate_temperature(model, torch.randint(0, 11, (600,)), cfg) == pytest.approx(1 / 0.8)
    assert shapes[-1][0] == (6, 100)  # 100 streams of one window each for a short split


def test_dynamic_evaluation_scores_and_adapts_at_the_temperature():
    """With adaptation turned (almost) off, dynamic evaluation is static evaluation at batch 1 at the
    given temperature; the temperature changes the figure."""
    model, cfg = tiny_model(dyneval_learning_rate=1e-12, dyneval_decay_rate=0.0)
    stats = gradient_statistics(model, torch.randint(0, 11, (400,)), cfg)
    ids = torch.randint(0, 11, (60,), generator=torch.Generator().manual_seed(3))
    for temperature in (1.0, 0.8):
        got = dynamic_evaluate(model, ids, stats, cfg, temperature)
        want = evaluate(model, batchify(ids, 1), cfg.max_time_steps, (temperature,))[0]
        assert got == pytest.approx(want, rel=1e-5)
    assert dynamic_evaluate(model, ids, stats, cfg, 0.8) != pytest.approx(
        dynamic_evaluate(model, ids, stats, cfg)
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dyneval")
    cfg = make_config(
        {
            "dataset": "ptb",
            "data_dir": str(write_ptb_documents(tmp / "data")),
            "hidden_size": 24,
            "batch_size": 16,
            "bptt": 20,
            "eval_every": 60,
            "max_steps": 60,
            "learning_rate": 0.003,
            "optimizer": "adam",
            "run_dir": str(tmp / "run"),
            "seed": 1,
            "dyneval": True,
            "max_time_steps": 10,
            "dyneval_learning_rate": 3e-4,
            "dyneval_decay_rate": 1e-3,
        }
    )
    return cfg, train(cfg)


@pytest.mark.slow
def test_dynamic_evaluation_lowers_held_out_loss(trained):
    """Held-out text from the training text's source: adapting to it lowers the loss (§4.5)."""
    cfg, result = trained
    model, _ = load_checkpoint(result.best_checkpoint)
    corpus = load_corpus(cfg)
    static = evaluate(model, batchify(corpus.test, 1), cfg.max_time_steps)[0]
    assert result.dyneval_test_loss is not None and result.dyneval_test_loss < static - 0.05
    assert result.dyneval_val_loss is not None


@pytest.mark.slow
def test_evaluate_command_matches_the_trainers_number(trained, capsys):
    """`rnntune evaluate --dyneval` runs the trainer's implementation: the same number."""
    import json

    from tuner.cli import main

    _, result = trained
    for split, want in (("test", result.dyneval_test_loss), ("valid", result.dyneval_val_loss)):
        assert main(["evaluate", result.best_checkpoint, "--split", split, "--dyneval", "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert got["loss"] == pytest.approx(want, rel=1e-6)
        assert got["temperature"] == result.dyneval_temperature  # the same estimate


def test_statistics_read_at_most_dyneval_stats_batches_windows():
    """lamb/experiment/mogrifier/tune_dyneval.sh sets `max_training_eval_batches=500` and `batch_size=1024`;
    lamb/evaluation.py `evaluate_all` gathers the squared gradients on the training evaluation:

        dyneval.zero_sum_squared_grads()
        training_xe = evaluate(model, make_train_iterator, ..., extra_ops=[dyneval.add_squared_grads_op()])

    whose iterator is `corpus.get_batches(data['training'], ..., max_batches=max_training_eval_batches)`:
    the first windows only. Capped at 2 windows, the statistics are those of the split cut after them."""
    model, cfg = tiny_model(dyneval_stats_batches=2)
    ids = torch.randint(0, 11, (1024 * 30,), generator=torch.Generator().manual_seed(4))
    capped = gradient_statistics(model, ids, cfg)
    uncapped = cfg.model_copy(update={"dyneval_stats_batches": None})
    cut = batchify(ids, 1024)[: 2 * 5 + 1].t().flatten()  # the same 1024 streams, two windows of 5
    reference = gradient_statistics(model, cut, uncapped)
    whole = gradient_statistics(model, ids, uncapped)
    assert (capped.windows, reference.windows, capped.batch_size, reference.batch_size) == (2, 2, 1024, 1024)
    assert whole.windows == 6
    for a, b, c in zip(capped.scale, reference.scale, whole.scale):
        assert torch.allclose(a, b) and not torch.allclose(a, c)
