"""A trial's run folder copied to its study's object store (S3 over HTTP, moto's server mode)."""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from pathlib import Path

import pytest

from tests import s3_server
from tests.trainer.corpora import write_ptb
from trainer import make_config, train
from tuner.storage.object_store import ObjectLocation, ObjectStore
from tuner.sweeps.trial.mirror import RunMirror, copied_step

s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures


def test_changed_files_are_uploaded_and_the_checkpoint_named_by_its_key(tmp_path, bucket):
    run_dir = tmp_path / "trial-3"
    run_dir.mkdir()
    (run_dir / "best.pt").write_bytes(b"b" * 100)
    (run_dir / "last.pt").write_bytes(b"l" * 100)
    (run_dir / ".last.pt.123.tmp").write_bytes(b"half-written")
    mirror = RunMirror(f"s3://{bucket}/studies/x", run_dir)
    result = mirror.published({"step": 10, "best_checkpoint": str(run_dir / "best.pt")})
    folder = f"s3://{bucket}/studies/x/trial-3"
    assert result == {"step": 10, "best_checkpoint": f"{folder}/best.pt"}
    assert mirror.store.sizes() == {f"{folder}/best.pt": 100, f"{folder}/last.pt": 100}
    (run_dir / "last.pt").write_bytes(b"L" * 120)
    os.utime(run_dir / "last.pt", ns=(1, 1))  # changed: a new mtime and size
    assert mirror.push() == ["last.pt"]  # best.pt unchanged: not sent again
    assert mirror.push() == []


def test_a_retry_without_the_folder_resumes_from_the_copy(tmp_path, bucket):
    first = tmp_path / "node-a" / "trial-0"
    first.mkdir(parents=True)
    (first / "last.pt").write_bytes(b"state at step 20")
    (first / "metrics.jsonl").write_text('{"step": 20}\n')
    RunMirror(f"s3://{bucket}/s", first).push()
    other = tmp_path / "node-b" / "trial-0"  # the retry runs on another node
    mirror = RunMirror(f"s3://{bucket}/s", other)
    assert mirror.pull() == ["last.pt", "metrics.jsonl"]
    assert (other / "last.pt").read_bytes() == b"state at step 20"
    assert mirror.push() == []  # what was fetched is not sent back
    assert mirror.pull() == []  # a folder with a last.pt resumes from its own
    assert mirror.folder == ObjectLocation(bucket, "s/trial-0")
    assert copied_step(mirror.store, mirror.folder) == 20  # read from the copy, weights not fetched
    (first.parent / "trial-1").mkdir()
    (first.parent / "trial-1" / "metrics.jsonl").write_text('{"step": 10}\nnot json\n')
    RunMirror(f"s3://{bucket}/s", first.parent / "trial-1").push()
    assert copied_step(mirror.store, mirror.store.root.child("trial-1")) == 0  # no last.pt: from 0
    assert copied_step(mirror.store, mirror.store.root.child("trial-9")) == 0  # no copy at all


class Killed(BaseException):
    """The trial process dying in the middle of a push."""


class DiesAfter(ObjectStore):
    """The study's real store, whose process dies after `uploads` more uploads."""

    def __init__(self, root: ObjectLocation, uploads: int) -> None:
        super().__init__(root)
        self.uploads = uploads

    def upload(self, local: Path, key: ObjectLocation) -> None:
        if self.uploads == 0:
            raise Killed
        self.uploads -= 1
        super().upload(local, key)


def _config(data: str, run_dir: Path, max_steps: int):
    settings = {"dataset": "ptb", "data_dir": data, "hidden_size": 32, "batch_size": 16, "bptt": 20}
    return make_config({**settings, "eval_every": 10, "max_steps": max_steps, "run_dir": str(run_dir)})


def _killed_in_push(data: str, run_dir: Path, where: str, uploads: int) -> list[int]:
    """Train to 20, then on to 30, the step-30 push dying after `uploads` uploads: the steps the
    study got (each report reaches the driver after its push)."""
    stored: list[int] = []
    mirror = RunMirror(where, run_dir)

    def report(metrics: dict) -> None:
        if metrics["step"] == 30:  # the push that the kill cuts short
            mirror.store = DiesAfter(mirror.store.root, uploads)
        stored.append(mirror.published(metrics)["step"])

    train(_config(data, run_dir, 20), report=report)
    mirror.push()  # the trial's summary, as the trainable publishes it at its end
    with pytest.raises(Killed) if uploads < 3 else nullcontext():
        train(_config(data, run_dir, 30), report=report)
    return stored


def test_a_push_cut_short_anywhere_loses_no_evaluation_on_another_node(tmp_path, bucket):
    """A trial killed after any number of its step-30 push's uploads, retried on a node without
    its folder: every step is either in the study (reported before the kill) or reported by the
    retry, and the retry's metrics.jsonl has one line per step. With last.pt uploaded before the
    line of its evaluation, a cut between the two lost step 30."""
    data = str(write_ptb(tmp_path / "data"))
    for uploads in range(4):  # best.pt, metrics.jsonl, last.pt: cut before each, or none
        where = f"s3://{bucket}/cut-{uploads}"
        stored = _killed_in_push(data, tmp_path / f"{uploads}-a" / "trial-0", where, uploads)
        other = tmp_path / f"{uploads}-b" / "trial-0"
        mirror = RunMirror(where, other)
        copied = copied_step(mirror.store, mirror.folder)
        mirror.pull()
        seen: list[dict] = []
        train(_config(data, other, 40), report=seen.append)
        steps = [m["step"] for m in seen]
        # The step the driver reads off the copy is where the retry resumed (the evaluation it
        # reports first, again), or one evaluation past it when the cut fell between metrics.jsonl
        # and last.pt.
        resumed = steps[0]
        assert copied == resumed or (copied == resumed + 10 and uploads == 2), (uploads, copied, steps)
        assert sorted(set(stored) | set(steps)) == [10, 20, 30, 40], (uploads, stored, steps)
        lines = (other / "metrics.jsonl").read_text().splitlines()
        assert [json.loads(line)["step"] for line in lines] == [10, 20, 30, 40], uploads
