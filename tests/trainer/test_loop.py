"""The training loop: learning, divergence recovery, checkpoints, resume and the report callback."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
import torch

from tests.trainer.corpora import write_ptb
from trainer import Trainer, TrainingDiverged, load_checkpoint, make_config, train
from trainer.checkpoint import read_checkpoint
from trainer.data import batchify, load_corpus
from trainer.evaluate import evaluate
from trainer.loop import LR_DECAY_ON_RESTORE


def tiny(tmp_path, **kw):
    base = {
        "dataset": "ptb",
        "data_dir": str(write_ptb(tmp_path / "data")),
        "hidden_size": 32,
        "batch_size": 16,
        "bptt": 20,
        "eval_every": 10,
        "max_steps": 30,
        "learning_rate": 0.003,
        "run_dir": str(tmp_path / "run"),
        "seed": 1,
    }
    base.update(kw)
    return make_config(base)


def unigram_loss(corpus) -> float:
    counts = Counter(corpus.train.tolist())
    total = sum(counts.values())
    return -sum(math.log(counts[t] / total) for t in corpus.valid.tolist()) / corpus.valid.numel()


def test_short_run_beats_the_unigram_baseline(tmp_path):
    # Adam with beta1 = 0 (Mogrifier paper §3.3): RAdam's variance rectification warms up over
    # ~1/(1 - beta2) = 1000 steps, too slow to show learning in a 150-step test.
    cfg = tiny(tmp_path, max_steps=150, eval_every=50, optimizer="adam")
    result = train(cfg)
    baseline = unigram_loss(load_corpus(cfg))
    assert result.best_val_loss < 0.5 * baseline
    assert result.test_loss is not None and result.test_loss < 0.5 * baseline


def test_run_folder_layout_and_metrics(tmp_path):
    cfg = tiny(tmp_path)
    seen = []
    result = train(cfg, report=seen.append)
    run = tmp_path / "run"
    assert {"config.yaml", "metrics.jsonl", "best.pt", "last.pt", "result.json"} <= {
        p.name for p in run.iterdir()
    }
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [10, 20, 30] == [m["step"] for m in seen]
    for key in ("step", "epoch", "val_loss", "raw_val_loss", "avg_length", "tokens_per_s", "lr"):
        assert key in rows[0]
    assert result.best_val_loss == min(r["val_loss"] for r in rows)


def test_callback_can_stop_the_run(tmp_path):
    result = train(tiny(tmp_path, max_steps=100), report=lambda m: m["step"] >= 20)
    assert result.stopped == "callback" and result.steps == 20


def test_injected_nan_restores_best_checkpoint_with_lower_lr(tmp_path):
    cfg = tiny(tmp_path, max_steps=100)
    trainer = Trainer(cfg)
    trainer.run_dir.mkdir(parents=True)
    for _ in range(10):
        trainer.train_step()
    trainer._evaluation([], 0.0)  # writes best.pt at step 10
    best = read_checkpoint(tmp_path / "run" / "best.pt")
    with torch.no_grad():
        trainer.params[0].fill_(float("nan"))
    trainer.train_step()
    assert trainer.restores == 1
    assert trainer.lr == pytest.approx(cfg.learning_rate * LR_DECAY_ON_RESTORE)
    assert all(g["lr"] == pytest.approx(trainer.lr) for g in trainer.optimizer.param_groups)
    assert torch.equal(trainer.params[0].detach(), best["raw"][0])
    losses = [trainer.train_step() for _ in range(5)]
    assert all(math.isfinite(x) for x in losses) and trainer.step == 15


@pytest.mark.parametrize("limit", [3, 0])
def test_divergence_past_the_limit_fails_with_a_reason(tmp_path, limit):
    """`divergence_restores` restores, then TrainingDiverged; 0 (the Mogrifier paper's recipe, no
    restart) fails at the first divergence."""
    trainer = Trainer(tiny(tmp_path, divergence_restores=limit))
    trainer.model.register_forward_hook(lambda mod, args, out: (out[0] * float("nan"), out[1]))
    steps = 0
    with pytest.raises(TrainingDiverged, match=f"after {limit} restores") as failed:
        for _ in range(limit + 2):
            steps += 1
            trainer.train_step()
    assert steps == limit + 1 and trainer.restores == limit + 1
    assert failed.value.step == trainer.step  # what a sweep stores as `diverged_at`


def test_resume_reaches_the_same_state(tmp_path):
    common = {"state_dropout": 0.2, "input_dropout": 0.1, "max_steps": 40}
    straight = train(tiny(tmp_path / "a", **common))
    train(tiny(tmp_path / "b", **{**common, "max_steps": 20}))
    resumed = train(tiny(tmp_path / "b", **common))
    a = read_checkpoint(tmp_path / "a" / "run" / "last.pt")
    b = read_checkpoint(tmp_path / "b" / "run" / "last.pt")
    assert all(torch.equal(x, y) for x, y in zip(a["raw"], b["raw"]))
    assert resumed.best_val_loss == straight.best_val_loss

    def curve(p):
        return [
            json.loads(line)["val_loss"] for line in (p / "run" / "metrics.jsonl").read_text().splitlines()
        ]

    assert curve(tmp_path / "a") == curve(tmp_path / "b")


def test_resume_reports_again_an_evaluation_saved_but_not_seen(tmp_path):
    """A run killed between writing last.pt and reporting its evaluation resumes past that
    evaluation; the caller sees it on resume, so a tuner's curve has every step."""

    def killed_at_20(metrics):
        if metrics["step"] == 20:
            raise KeyboardInterrupt  # as if the process died inside the report call

    with pytest.raises(KeyboardInterrupt):
        train(tiny(tmp_path), report=killed_at_20)
    seen: list[dict] = []
    train(tiny(tmp_path), report=lambda m: seen.append(m) and None)
    assert [m["step"] for m in seen] == [20, 30]
    logged = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert seen[0]["val_loss"] == logged[1]["val_loss"]  # the evaluation at 20, as it was logged


def test_resume_past_a_line_whose_checkpoint_was_never_written_measures_it_again(tmp_path):
    """A run killed after its step-30 line but before last.pt was replaced (or a line cut short by
    the kill) resumes at 20: the lines past 20 are dropped and measured again, so metrics.jsonl
    keeps one line per step, the same values as an unbroken run, and the caller sees 20 again."""
    straight = tmp_path / "straight"
    train(tiny(straight, max_steps=40))
    train(tiny(tmp_path, max_steps=20))
    at_20 = (tmp_path / "run" / "last.pt").read_bytes()
    train(tiny(tmp_path, max_steps=30))
    (tmp_path / "run" / "last.pt").write_bytes(at_20)
    with open(tmp_path / "run" / "metrics.jsonl", "a") as f:
        f.write('{"step": 4')  # cut short by the kill
    seen: list[dict] = []
    train(tiny(tmp_path, max_steps=40), report=lambda m: seen.append(m) and None)
    assert [m["step"] for m in seen] == [20, 30, 40]

    def logged(folder):
        lines = (folder / "run" / "metrics.jsonl").read_text().splitlines()
        return [(m["step"], m["val_loss"]) for m in map(json.loads, lines)]

    assert logged(tmp_path) == logged(straight)
    assert [s for s, _ in logged(tmp_path)] == [10, 20, 30, 40]


def test_resume_refuses_a_different_config(tmp_path):
    train(tiny(tmp_path, max_steps=10))
    with pytest.raises(ValueError, match="hidden_size"):
        Trainer(tiny(tmp_path, hidden_size=48))


def test_checkpoint_loads_into_a_ready_model(tmp_path):
    cfg = tiny(tmp_path)
    result = train(cfg)
    model, loaded_cfg = load_checkpoint(result.best_checkpoint)
    assert loaded_cfg == cfg and not model.training and len(model.vocab) == model.vocab_size
    valid = batchify(load_corpus(cfg).valid, cfg.eval_batch_size)
    assert evaluate(model, valid, cfg.bptt)[0] == pytest.approx(result.best_val_loss, rel=1e-5)


def test_training_steps_start_some_sequences_from_the_zero_state(tmp_path):
    """drop_state_probability (lamb/training.py): before a training step, each sequence's carried
    state is zeroed with that probability; evaluation never drops it. 0 leaves every state carried."""
    for p, want_dropped in ((0.5, True), (0.0, False)):
        trainer = Trainer(tiny(tmp_path / str(p), drop_state_probability=p, batch_size=64))
        carried: list[torch.Tensor] = []

        def record(mod, args, carried=carried):
            carried.append(args[1][0])

        trainer.model.layers[0].register_forward_pre_hook(record)
        trainer.train_step()  # the first window starts from zeros anyway
        before = trainer.state[0][0].clone()
        assert (before != 0).any(dim=1).all()
        trainer.train_step()
        zero_rows = (carried[-1] == 0).all(dim=1)
        assert bool(zero_rows.any()) == want_dropped
        if want_dropped:
            assert 10 < int(zero_rows.sum()) < 54  # about half of 64 sequences
        assert torch.equal(carried[-1][~zero_rows], before[~zero_rows])
