"""Small trained checkpoints for the tests of dynamic-evaluation studies (thesis §4.5, Table 2.6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.trainer.corpora import write_ptb_documents
from trainer import make_config, train

# Small enough to train in seconds on one core; `max_eval_tokens` caps what a study's trial reads.
SMALL = {
    "hidden_size": 16,
    "batch_size": 16,
    "bptt": 32,
    "learning_rate": 0.01,
    "optimizer": "adam",
    "max_eval_tokens": 1000,
    "device": "cpu",
    "seed": 1,
}


def small_checkpoint(folder: Path, steps: int = 60, **settings: Any) -> Path:
    """Train `steps` steps (default: on the built-in corpus) into `folder/run`; its best.pt, absolute."""
    config = {**SMALL, "max_steps": steps, "eval_every": steps, "run_dir": str(folder / "run"), **settings}
    result = train(make_config(config))
    assert result.best_checkpoint is not None
    return Path(result.best_checkpoint).resolve()


def quick_checkpoint(folder: Path) -> Path:
    """A few steps on a tiny word-level corpus (tests.trainer.corpora): its splits are short, so a
    dynamic evaluation of the whole split takes a second."""
    data = write_ptb_documents(folder / "data", train=300, valid=20, test=20)
    return small_checkpoint(folder, steps=4, dataset="ptb", data_dir=str(data), batch_size=4, bptt=16)
