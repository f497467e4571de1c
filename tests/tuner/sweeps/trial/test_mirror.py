"""A trial's run folder copied to its study's object store (S3 over HTTP, moto's server mode)."""

from __future__ import annotations

import os

from tests import s3_server
from tuner.storage.object_store import ObjectLocation
from tuner.sweeps.trial.mirror import RunMirror

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
