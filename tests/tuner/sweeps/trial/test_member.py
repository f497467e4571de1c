"""A population member's checkpoints, on plain values and real folders (no Ray cluster)."""

from __future__ import annotations

import json

import pytest
from ray.tune import Checkpoint

from tuner.sweeps.trial import member


@pytest.mark.parametrize(
    ("step", "given", "start", "expected"),
    [
        (40, 20, 30, True),  # the next perturbation step: the scheduler needs it
        (30, 20, 20, False),  # between perturbation steps
        (40, 40, 40, False),  # the step it restarted from: the scheduler holds that checkpoint
        (40, 20, 40, True),  # retried in place from a folder at the sync point: the scheduler lacks it
        (40, None, 40, False),  # a resumed member's start: its population first meets past it
        (60, None, 40, True),
    ],
)
def test_a_member_sends_a_checkpoint_at_each_perturbation_step_the_scheduler_lacks(
    step, given, start, expected
):
    assert member.sends_checkpoint(step, 20, given, start) is expected


def test_a_saved_checkpoint_names_its_member_and_step_and_restores_only_anothers(tmp_path) -> None:
    source, own = tmp_path / "source", tmp_path / "own"
    source.mkdir()
    own.mkdir()
    (source / "last.pt").write_bytes(b"source model")
    (own / "last.pt").write_bytes(b"own model")
    with member.saved(source, "b", {"step": 40, "val_loss": 3.5}) as checkpoint:
        kept = Checkpoint.from_directory(str(tmp_path / "kept"))
        checkpoint.to_directory(kept.path)
    assert member.given_step(kept) == 40 and member.given_step(None) is None
    assert json.loads((tmp_path / "kept" / member.MEMBER_FILE).read_text())["ray_trial_id"] == "b"
    assert member.restore(kept, own, "b", max_steps=80) is False  # its own: the folder holds it
    assert (own / "last.pt").read_bytes() == b"own model"
    assert member.restore(kept, own, "a", max_steps=80) is True
    assert (own / "last.pt").read_bytes() == b"source model"
    assert member.restore(kept, own, "a", max_steps=40) is False  # at the last step: no copy


def _in_remote_storage(tmp_path, own: str, step: int) -> Checkpoint:
    """A member's checkpoint as Ray Tune keeps it in an object store: on a filesystem that is not
    pyarrow's local one (a subtree of a folder here), which Ray downloads before it is read."""
    import pyarrow.fs

    source = tmp_path / "source"
    source.mkdir()
    (source / "last.pt").write_bytes(b"source model")
    (tmp_path / "bucket").mkdir()
    with member.saved(source, own, {"step": step, "val_loss": 3.5}) as checkpoint:
        checkpoint.to_directory(str(tmp_path / "bucket" / "ckpt"))
    store = pyarrow.fs.SubTreeFileSystem(str(tmp_path / "bucket"), pyarrow.fs.LocalFileSystem())
    return Checkpoint("ckpt", filesystem=store)


class _DeletesRaysSharedFolder:
    """What another member's clean-up does to Ray's one download folder of a checkpoint: holds Ray's
    lock on it, deletes it once it appears, and lets go (at most `wait_s` later)."""

    def __init__(self, checkpoint: Checkpoint, wait_s: float = 2.0) -> None:
        import shutil
        import threading
        import time
        from pathlib import Path

        from ray.air._internal.filelock import TempFileLock

        self.folder = Path(checkpoint._get_temporary_checkpoint_dir())
        self.appeared = False
        locked = threading.Event()

        def run() -> None:
            with TempFileLock(str(self.folder)):
                locked.set()
                deadline = time.monotonic() + wait_s
                while not self.folder.exists() and time.monotonic() < deadline:
                    time.sleep(0.01)
                self.appeared = self.folder.exists()
                shutil.rmtree(self.folder, ignore_errors=True)

        self.thread = threading.Thread(target=run)
        self.thread.start()
        locked.wait(10)

    def join(self) -> None:
        self.thread.join(10)


def test_rays_shared_download_folder_can_vanish_under_a_waiting_member(tmp_path) -> None:
    """Ray's side, as met in a population sweep kept in S3: `as_directory` waits for the node's one
    folder of the checkpoint, and fails when another process's clean-up deleted it meanwhile."""
    checkpoint = _in_remote_storage(tmp_path, "b", 40)
    other = _DeletesRaysSharedFolder(checkpoint)
    vanished = "does not exist, even though it should have been created"
    with pytest.raises(RuntimeError, match=vanished), checkpoint.as_directory():
        pass
    other.join()


def test_a_member_reads_a_remote_checkpoint_in_a_folder_of_its_own(tmp_path) -> None:
    checkpoint = _in_remote_storage(tmp_path, "b", 40)
    own = tmp_path / "own"
    other = _DeletesRaysSharedFolder(checkpoint, wait_s=0.5)
    assert member.given_step(checkpoint) == 40
    assert member.restore(checkpoint, own, "a", max_steps=80) is True
    other.join()
    assert (own / "last.pt").read_bytes() == b"source model"
    assert not other.appeared  # Ray's shared folder was never made
    with member.files_of(checkpoint) as where:
        assert (where / "last.pt").read_bytes() == b"source model"
    assert not where.exists()  # the private download is removed after use
