"""Divergence checks read every few steps, as on CUDA (trainer/divergence.py), exercised on CPU by
setting the run's check interval: no step between reads reads a tensor on the host, a divergence
is found at the next read and restores the best checkpoint with the learning rate cut, and the
metrics keep their training loss. An explosion is a window's mean loss, on every device: a
one-step spike is not a divergence."""

from __future__ import annotations

import json
import math

import pytest
import torch

from tests.trainer.test_loop import tiny
from trainer import Trainer
from trainer.checkpoint import read_checkpoint
from trainer.loop import LR_DECAY_ON_RESTORE, TrainingDiverged

EVERY = 4


def deferred(trainer: Trainer) -> Trainer:
    trainer.watch.every = EVERY  # what CUDA uses (WINDOW), shorter
    trainer.watch.immediate = False  # no per-step reads, as on CUDA
    return trainer


def test_steps_between_reads_never_read_a_tensor_on_the_host(tmp_path, monkeypatch):
    trainer = deferred(Trainer(tiny(tmp_path)))
    assert trainer.train_step() is not None  # warm up the optimizer's state first
    # RAdam keeps its step counters on the CPU even for CUDA weights (not `capturable`): reading
    # them never waits for the GPU, so they are not counted.
    counters = {id(state["step"]) for state in trainer.optimizer.state.values()}
    reads = []
    for name in ("item", "tolist", "__bool__", "__float__"):
        original = getattr(torch.Tensor, name)

        def spy(self, *args, _name=name, _original=original):
            if id(self) not in counters:
                reads.append(_name)
            return _original(self, *args)

        monkeypatch.setattr(torch.Tensor, name, spy)
    losses = [trainer.train_step() for _ in range(EVERY - 2)]  # steps 2 and 3: no read
    assert reads == [] and all(math.isnan(x) for x in losses)
    read = trainer.train_step()  # step 4: one read of the accumulated checks
    assert reads == ["tolist"] and math.isfinite(read)


def test_a_divergence_is_found_at_the_next_read_and_restores_the_best_checkpoint(tmp_path):
    cfg = tiny(tmp_path, max_steps=100)
    trainer = deferred(Trainer(cfg))
    trainer.run_dir.mkdir(parents=True)
    for _ in range(8):
        trainer.train_step()
    trainer._evaluation([], 0.0)  # best.pt at step 8
    best = read_checkpoint(tmp_path / "run" / "best.pt")
    with torch.no_grad():
        trainer.params[0].fill_(float("nan"))
    assert math.isnan(trainer.train_step()) and trainer.restores == 0  # not read yet
    for _ in range(EVERY - 1):
        trainer.train_step()
    assert trainer.restores == 1
    assert trainer.lr == pytest.approx(cfg.learning_rate * LR_DECAY_ON_RESTORE)
    assert torch.equal(trainer.params[0].detach(), best["raw"][0])
    losses = [trainer.train_step() for _ in range(EVERY)]
    assert math.isfinite(losses[-1]) and trainer.restores == 1


def test_a_run_with_deferred_checks_reports_its_training_loss(tmp_path):
    trainer = deferred(Trainer(tiny(tmp_path, eval_every=10, max_steps=20)))
    result = trainer.run()
    assert result.steps == 20
    lines = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in lines] == [10, 20]
    assert all(math.isfinite(m["train_loss"]) and m["train_loss"] > 0 for m in lines)


def _spike(trainer: Trainer, steps: set[int], factor: float = 3.0) -> None:
    """Scale the model's log-probabilities by `factor` (a finite loss above the explosion
    bound) on the forward passes numbered in `steps` (0-based)."""
    calls = iter(range(10**6))

    def hook(mod, args, out):
        return (out[0] * factor, out[1]) if next(calls) in steps else out

    trainer.model.register_forward_hook(hook)


@pytest.mark.parametrize("immediate", [True, False], ids=["cpu", "deferred as on cuda"])
def test_a_one_step_spike_is_not_a_divergence(tmp_path, immediate):
    """Adam's first steps with β1 = 0 spiked one step's loss to 2.6x a uniform prediction's and
    recovered (docs/gpu.md): the window's mean decides, on both paths alike."""
    trainer = Trainer(tiny(tmp_path, max_steps=100, divergence_restores=0))
    trainer.watch.every, trainer.watch.immediate = EVERY, immediate
    _spike(trainer, {1})
    losses = [trainer.train_step() for _ in range(2 * EVERY)]
    assert trainer.restores == 0
    if immediate:
        assert losses[1] > trainer.watch.explosion  # the spike itself was above the bound


@pytest.mark.parametrize("immediate", [True, False], ids=["cpu", "deferred as on cuda"])
def test_a_window_above_the_bound_is_a_divergence_naming_its_mean(tmp_path, immediate):
    trainer = Trainer(tiny(tmp_path, max_steps=100, divergence_restores=0))
    trainer.watch.every, trainer.watch.immediate = EVERY, immediate
    _spike(trainer, set(range(100)))
    for _ in range(EVERY - 1):
        trainer.train_step()
    with pytest.raises(
        TrainingDiverged,
        match=rf"step {EVERY} \(mean training loss [\d.]+ nats/token over the last {EVERY} steps, above twice a uniform",
    ):
        trainer.train_step()
