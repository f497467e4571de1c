"""Checkpoints are read as data: a file with a pickled payload is refused without running it, and
every kind of checkpoint the trainer writes still loads (trainer/checkpoint.py)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
import torch

from tests.trainer.test_loop import tiny
from trainer import load_checkpoint, train
from trainer.checkpoint import FORMS_KEY, read_checkpoint


class Payload:
    """Unpickling this runs a command: what a malicious 'checkpoint' would carry."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickled_payload_is_refused_without_running(tmp_path: Path):
    marker = tmp_path / "ran"
    evil = tmp_path / "best.pt"
    torch.save({"format_version": 1, "x": Payload(marker)}, evil)
    with open(tmp_path / "plain.pkl", "wb") as f:
        pickle.dump(Payload(marker), f)
    for path in (evil, tmp_path / "plain.pkl"):
        with pytest.raises(ValueError, match="is not an rnntune checkpoint"):
            read_checkpoint(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"averaging": "switch", "optimizer": "adam"},
        {"cell": "mgru"},
        {
            "dataset": "reverse_copy",
            "reverse_copy_length": 3,
            "reverse_copy_vocab": 6,
            "max_eval_tokens": 300,
            "eval_batch_size": 100,
        },
    ],
    ids=["2ta-radam", "switch-adam", "mgru", "reverse-copy"],
)
def test_every_checkpoint_the_trainer_writes_loads_as_data(tmp_path: Path, settings):
    result = train(tiny(tmp_path, max_steps=10, eval_every=5, **settings))
    for name in ("best.pt", "last.pt"):
        assert read_checkpoint(Path(result.run_dir) / name)["format_version"] == 1
    model, cfg = load_checkpoint(Path(result.run_dir) / "best.pt")
    assert cfg.max_steps == 10 and not model.training


def test_a_checkpoint_written_by_the_previous_main_loads_as_data():
    """tests/trainer/data/previous-main-last.pt: `last.pt` of a 4-step Mogrifier LSTM run on the
    built-in corpus, written by main at 4306915 (before checkpoints were read as data)."""
    path = Path(__file__).parent / "data" / "previous-main-last.pt"
    checkpoint = read_checkpoint(path)
    assert checkpoint["position"]["step"] == 4 and checkpoint["config"]["cell"] == "mogrifier_lstm"
    model, cfg = load_checkpoint(path)
    assert cfg.mogrifier_rounds == 2 and model.hidden_size == 8


def test_a_printed_checkpoint_from_before_the_corrected_form_reads_as_corrected(tmp_path: Path):
    """Before `corrected` existed, `printed` named it (trainer/checkpoint.py FORMS_KEY); a checkpoint
    written since keeps its form."""
    result = train(tiny(tmp_path, cell="tmgru", multiplicative_form="printed", max_steps=2, eval_every=2))
    path = Path(result.run_dir) / "best.pt"
    assert load_checkpoint(path)[1].multiplicative_form == "printed"
    old = {k: v for k, v in read_checkpoint(path).items() if k != FORMS_KEY}
    torch.save(old, tmp_path / "old.pt")
    model, cfg = load_checkpoint(tmp_path / "old.pt")
    assert cfg.multiplicative_form == "corrected" and model.layers[0].printed is False
