"""A population member's side of population-based training, through Ray Tune's checkpoint API.

At every perturbation step a member reports a checkpoint with its result: its run folder's
resumable `last.pt` and `best.pt` (the trainer's own: model, optimiser, 2TA averages, data position,
RNG) and `member.json` saying whose it is. When the scheduler makes a member copy another, Ray
restarts it with `tune.get_checkpoint()` naming the other's; `restore` puts those files in the
member's own run folder and the trainer resumes from them with the member's new settings
(`Trainer(..., retune=True)`, which accepts only `trainer.MUTABLE_SETTINGS` changing). The folder
is the truth of what a member trains: its model's settings are those its checkpoint was written
with (`continued_settings`), so a member resumed after a stop goes on with the model it had copied.
The driver records a copy as the scheduler decides it; the first result after each start carries
the settings in force (the member's first segment, and a check after a resume).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.fs

CHECKPOINT_FILES = ("last.pt", "best.pt")
MEMBER_FILE = "member.json"


def restore(checkpoint: Any, run_dir: Path, own_id: str, max_steps: int) -> bool:
    """Put another member's Ray checkpoint's files in this member's run folder (each replaced whole,
    atomically); False (nothing changed) for its own checkpoint, whose files the folder already
    holds, and for one at the last step: a copy there would only end as a duplicate of the other."""
    run_dir.mkdir(parents=True, exist_ok=True)
    info = _member_info(checkpoint)
    if info.get("ray_trial_id") == own_id or int(info.get("step") or 0) >= max_steps:
        return False
    with files_of(checkpoint) as where:
        for name in CHECKPOINT_FILES:
            if (where / name).is_file():
                tmp = run_dir / f".{name}.restoring"
                shutil.copyfile(where / name, tmp)
                os.replace(tmp, run_dir / name)
    return True


@contextmanager
def files_of(checkpoint: Any) -> Iterator[Path]:
    """A folder holding a Ray checkpoint's files: its own on a local filesystem, else a download
    into a temporary folder of this call's own. Not Ray's `Checkpoint.as_directory`, which downloads
    a checkpoint in remote storage to one folder per checkpoint shared by a node's processes: when
    members restore one copy at once, one's clean-up can delete it under another waiting for it
    (Ray 2.60.0, ray/train/_checkpoint.py `to_directory`: "does not exist, even though it should
    have been created by another process"), and that member fails and is retried."""
    if isinstance(checkpoint.filesystem, pyarrow.fs.LocalFileSystem):
        yield Path(checkpoint.path)
        return
    with tempfile.TemporaryDirectory(prefix="rnntune-checkpoint-") as folder:
        yield Path(checkpoint.to_directory(folder))


def given_step(checkpoint: Any) -> int | None:
    """The step of the Ray checkpoint a member started from (None without one)."""
    if checkpoint is None:
        return None
    step = _member_info(checkpoint).get("step")
    return None if step is None else int(step)


def _member_info(checkpoint: Any) -> dict[str, Any]:
    """The checkpoint's `member.json`, read alone from its storage (no download of the weights)."""
    with checkpoint.filesystem.open_input_stream(f"{checkpoint.path}/{MEMBER_FILE}") as stream:
        return json.loads(stream.read())


def sends_checkpoint(step: int, interval: int, given: int | None, start: int) -> bool:
    """Whether a member's result at `step` carries a Ray checkpoint: at every perturbation step past
    its `start`, but the one of the checkpoint it started from (`given`), which the scheduler holds.
    The step it starts at is sent again only by a member retried in place (it has a Ray checkpoint,
    and its folder may be past it, even at the next sync point); a resumed population's members
    (none) first meet past every start (`population.first_sync`), so it would only be a copy more."""
    if step % interval or step == given:
        return False
    return step > start or given is not None


def continued_settings(
    settings: dict[str, Any], saved: dict[str, Any] | None, steer: frozenset[str]
) -> dict[str, Any]:
    """The trainer config a member goes on with: the settings its folder's checkpoint was written
    with (`saved`: after a copy, the other member's model), except those that `steer` the run
    (the mutable settings, run folder, device, length), which come from the member's config."""
    if saved is None:
        return settings
    return {**saved, **{k: v for k, v in settings.items() if k in steer}}


@contextmanager
def saved(run_dir: Path, own_id: str, metrics: dict[str, Any]) -> Iterator[Any]:
    """A Ray checkpoint of the member's run folder as it is now (just after an evaluation), for
    `tune.report(..., checkpoint=...)`, which copies it; the files are linked, not copied, here."""
    from ray.tune import Checkpoint

    with tempfile.TemporaryDirectory(prefix="member-") as tmp:
        where = Path(tmp)
        for name in CHECKPOINT_FILES:
            if (run_dir / name).is_file():
                try:
                    os.link(run_dir / name, where / name)  # the trainer replaces, never rewrites, its files
                except OSError:
                    shutil.copyfile(run_dir / name, where / name)
        info = {"ray_trial_id": own_id, "step": metrics.get("step"), "val_loss": metrics.get("val_loss")}
        (where / MEMBER_FILE).write_text(json.dumps(info))
        yield Checkpoint.from_directory(tmp)


def segment(step: int, settings: dict[str, float], trainer: dict[str, Any]) -> str:
    """The segment a member reports after a start (JSON: Ray flattens nested results): its step,
    its mutable `settings`, and as `params` the scalar settings of the model its trainer built
    (`trainer`, its folder's shape included: the driver keeps the tuned ones)."""
    params = {k: v for k, v in trainer.items() if isinstance(v, (bool, int, float, str))}
    return json.dumps({"step": step, "settings": settings, "params": {**params, **settings}})
