"""A trial's run folder copied to its study's object store, for a study kept there (`--storage s3://...`).

The trainer writes its run folder (`best.pt`, `last.pt`, `config.yaml`, `metrics.jsonl`, ...) on the
node's local disk; after each evaluation, before the result goes to the driver, the files that
changed are uploaded to `PREFIX/<run folder's name>/` (`last.pt` last), and the result's `best_checkpoint` names the
uploaded object (`s3://...`), which the study then records. A retry on a node without the folder
(its worker died) first downloads the copy, so it resumes from the last evaluation uploaded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuner.storage.object_store import KeyRefused, ObjectLocation, ObjectStore, parse

CHECKPOINT_KEY = "best_checkpoint"
RESUMES_FROM = "last.pt"


class RunMirror:
    """One run folder and its copy under the study's object store location."""

    def __init__(self, objects: str, run_dir: Path, store: ObjectStore | None = None) -> None:
        self.run_dir = run_dir
        self.store = store if store is not None else ObjectStore(parse(objects, "objects"))
        self.folder = self.store.root.child(run_dir.name)
        self._sent: dict[str, tuple[int, int]] = {}  # name -> (mtime_ns, size) last uploaded

    def pull(self) -> list[str]:
        """Download the copy when the local folder has nothing to resume from; the names fetched."""
        if (self.run_dir / RESUMES_FROM).is_file():
            return []
        fetched = []
        for uri in sorted(self.store.sizes(self.folder)):
            key = self.store.key(uri, "run folder")
            name = key.prefix.rsplit("/", 1)[-1]
            if key != self.folder.child(name):  # a deeper object is none of the trainer's files
                continue
            self.store.download(key, self.run_dir / name)
            stat = (self.run_dir / name).stat()
            self._sent[name] = (stat.st_mtime_ns, stat.st_size)
            fetched.append(name)
        return fetched

    def push(self) -> list[str]:
        """Upload the folder's files that changed since the last push; the names uploaded."""
        if not self.run_dir.is_dir():
            return []
        sent = []
        # last.pt last: a push cut short leaves the copy at an earlier last.pt whose evaluation's
        # line the copy's metrics.jsonl holds, never a last.pt past the lines it holds.
        for path in sorted(self.run_dir.iterdir(), key=lambda p: (p.name == RESUMES_FROM, p.name)):
            if path.name.startswith(".") or not path.is_file():
                continue  # a file the trainer is still writing is hidden until it is replaced whole
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            if self._sent.get(path.name) == stamp:
                continue
            self.store.upload(path, self.folder.child(path.name))
            self._sent[path.name] = stamp
            sent.append(path.name)
        return sent

    def published(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """`result` after a push, its `best_checkpoint` naming the uploaded object."""
        self.push()
        out = dict(result)
        local = out.get(CHECKPOINT_KEY)
        if isinstance(local, str) and local:
            out[CHECKPOINT_KEY] = self.folder.child(Path(local).name).uri
        return out


def copied_step(store: ObjectStore, folder: ObjectLocation) -> int:
    """The step a retry of the run copied to `folder` resumes from, read without downloading its
    weights: the last evaluation in the copy's metrics.jsonl when the copy holds a last.pt, else 0.
    That is last.pt's step, or one evaluation past it where a push was cut between the two uploads
    (`push` sends last.pt last)."""
    if store.size(folder.child(RESUMES_FROM)) is None:
        return 0
    try:
        lines = b"".join(store.chunks(folder.child("metrics.jsonl"))).decode(errors="replace").splitlines()
    except (KeyRefused, OSError):  # none there, or the store failed: nothing known past the start
        return 0
    steps = [0]
    for line in lines:
        try:
            metrics = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(metrics, dict) and isinstance(metrics.get("step"), int):
            steps.append(metrics["step"])
    return max(steps)
