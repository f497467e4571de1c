"""Checkpoints: one file each, written atomically, holding everything a run needs to go on.

A checkpoint holds the evaluation weights (`model`), the raw training weights, the 2TA averages,
the optimizer state, the full config, the vocabulary, the data position and the RNG state.
`load_checkpoint` turns one back into a ready model.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import torch

from .cells.mlstm import FORMS
from .config import TrainConfig, make_config
from .model import LanguageModel, ReverseCopyModel, make_model

FORMAT_VERSION = 1
# Marks the checkpoints written since `multiplicative_form` has three values (trainer/cells/mlstm.py).
# Before, `printed` named what is now `corrected`; `checkpoint_config` reads older ones that way.
FORMS_KEY = "multiplicative_forms"


def save_atomic(obj: dict[str, Any], path: str | Path) -> None:
    """`torch.save` to `path` through `write_atomic`: readers never see half a checkpoint."""
    write_atomic(Path(path), lambda f: torch.save(obj, f))


def write_atomic(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Call `write` on a temporary file beside `path`, fsync, then rename it over `path`: readers
    never see half a file, and a failed write leaves no temporary file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """The checkpoint's contents, unpickled with `weights_only=True`: only tensors and plain
    containers and numbers, never an arbitrary object, so a file someone else placed (a path named
    in a REST request, a run folder read from the database) cannot run code in this process. Every
    rnntune checkpoint is such data (tests/trainer/test_checkpoint_safety.py)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except Exception:  # pickle's and torch's own errors would describe the file's contents
        ckpt = None
    if not isinstance(ckpt, dict) or ckpt.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path} is not an rnntune checkpoint (format {FORMAT_VERSION})")
    return ckpt


def header() -> dict[str, Any]:
    """The fields every checkpoint starts with: its format, and the multiplicative forms this
    version tells apart (`checkpoint_config` reads older checkpoints by their absence)."""
    return {"format_version": FORMAT_VERSION, FORMS_KEY: list(FORMS)}


def checkpoint_config(ckpt: dict[str, Any]) -> TrainConfig:
    """The config a checkpoint was written with. One written before the printed and corrected
    multiplicative forms were told apart (it has no FORMS_KEY) and saying `printed` ran what is
    now `corrected`, and is read so."""
    values = dict(ckpt["config"])
    if FORMS_KEY not in ckpt and values.get("multiplicative_form") == "printed":
        values["multiplicative_form"] = "corrected"
    return make_config(values)


def load_checkpoint(
    path: str | Path, device: str | torch.device = "cpu"
) -> tuple[LanguageModel | ReverseCopyModel, TrainConfig]:
    """A ready model (evaluation mode, the checkpoint's best weights) and its config.

    A `reverse_copy` checkpoint gives the task's encoder–decoder (trainer.model.ReverseCopyModel).

    The vocabulary rides along as `model.vocab`.
    """
    ckpt = read_checkpoint(path, map_location=device)
    cfg = checkpoint_config(ckpt)
    model = make_model(cfg, len(ckpt["vocab"]), ckpt["hidden_size"])
    model.load_state_dict(ckpt["model"])
    model.vocab = ckpt["vocab"]
    return model.to(device).eval(), cfg


def resumed_evaluation(run_dir: Path, step: int) -> dict[str, Any] | None:
    """The metrics of the evaluation at `step` (where last.pt was written) from the run's
    metrics.jsonl, if it holds one. Lines past it, or cut short by a crash, were written by a run
    that stopped before (or while) its last.pt was replaced or uploaded: they are dropped, since
    the resumed run measures those evaluations again, so the file keeps one line per step."""
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return None
    text = path.read_text()
    kept, found = [], None
    for line in text.splitlines():
        try:
            metrics = json.loads(line)
        except json.JSONDecodeError:
            continue
        if (
            not isinstance(metrics, dict)
            or not isinstance(metrics.get("step"), int)
            or metrics["step"] > step
        ):
            continue
        kept.append(line)
        found = metrics if metrics["step"] == step else None
    if (rewritten := "".join(f"{line}\n" for line in kept)) != text:
        write_atomic(path, lambda f: f.write(rewritten.encode()))
    return found


def saved_header(path: str | Path) -> tuple[dict[str, Any], int]:
    """A checkpoint's config (as a dict) and the step it was written at, read without loading its
    tensors (memory-mapped): what a population member's folder holds, where a schedule resumes."""
    ckpt = torch.load(Path(path), map_location="cpu", mmap=True, weights_only=True)
    if not isinstance(ckpt, dict) or ckpt.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path} is not an rnntune checkpoint (format {FORMAT_VERSION})")
    return checkpoint_config(ckpt).to_dict(), int(ckpt["position"]["step"])
