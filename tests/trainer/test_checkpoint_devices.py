"""A checkpoint written by a GPU trial loads on a CPU-only machine (the API, `rnntune evaluate`).

A CPU-only PyTorch cannot make CUDA tensors, but what makes a GPU checkpoint unloadable here is only
the location recorded with each storage ("cuda:0"). PyTorch's public `register_package` hook lets
the test record that location while saving real tensors, so the file is what a GPU run writes:
`torch.load` without a `map_location` refuses it on this machine, exactly as it would refuse a
checkpoint from a GPU trial.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import pytest
import torch

from tests.trainer.corpora import write_ptb
from trainer import load_checkpoint, make_config, train
from trainer.checkpoint import read_checkpoint, save_atomic
from trainer.data import batchify, load_corpus
from trainer.evaluate import evaluate
from tuner.cli import main

_CLAIM_CUDA = {"on": False}


def _cuda_tag(storage: object) -> str | None:
    return "cuda:0" if _CLAIM_CUDA["on"] else None


def _no_restore(storage: object, location: str) -> None:
    return None  # loading falls through to PyTorch's own restorers


torch.serialization.register_package(0, _cuda_tag, _no_restore)


@contextlib.contextmanager
def saved_as_on_gpu() -> Iterator[None]:
    """While active, torch.save records every storage as living on cuda:0."""
    _CLAIM_CUDA["on"] = True
    try:
        yield
    finally:
        _CLAIM_CUDA["on"] = False


def test_a_gpu_trials_checkpoint_loads_and_evaluates_on_the_cpu(tmp_path, capsys):
    cfg = make_config(
        {
            "dataset": "ptb",
            "data_dir": str(write_ptb(tmp_path / "data")),
            "hidden_size": 32,
            "batch_size": 16,
            "bptt": 20,
            "eval_every": 10,
            "max_steps": 10,
            "run_dir": str(tmp_path / "run"),
            "seed": 1,
            "device": "cpu",
        }
    )
    result = train(cfg)
    ckpt = read_checkpoint(result.best_checkpoint)
    ckpt["config"]["device"] = "cuda:0"  # what a trial placed on a GPU records (trainable.placement)
    gpu_file = tmp_path / "gpu-best.pt"
    with saved_as_on_gpu():
        save_atomic(ckpt, gpu_file)

    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(gpu_file, weights_only=False)  # the file really claims CUDA storages

    model, loaded = load_checkpoint(gpu_file)
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    assert loaded.device == "cuda:0"  # the config says where it trained; the model is where it loaded
    valid = batchify(load_corpus(cfg).valid, cfg.eval_batch_size)
    assert evaluate(model, valid, cfg.bptt)[0] == pytest.approx(result.best_val_loss, rel=1e-5)

    assert main(["evaluate", str(gpu_file), "--split", "valid", "--temperature", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["split"] == "valid"
