"""Study-wide checkpoint retention: keep the weights of the N best trials, free the rest's disk.

A sweep of hundreds of trials writes a `best.pt` and a `last.pt` per trial; at PTB size that is
hundreds of megabytes each. Only the best few are ever downloaded or finalised, so once a trial is
finished and outside the top N COMPLETE trials its weight files are removed. Its `config.yaml` and
`metrics.jsonl` stay (and its params stay in the study), so any trial can be re-run exactly. Trials
that may still resume (RUNNING, or FAILed and waiting for a retry) are never touched, nor a weight
file another study uses (`pinned`: a dynamic-evaluation study of that model). A study kept in an
object store has its weight objects deleted there (`keep_top_objects`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from optuna.trial import FrozenTrial, TrialState

from tuner.storage import trial_attrs
from tuner.storage.object_store import ObjectStore, StorageRefused
from tuner.storage.study import value_of

WEIGHT_FILES = ("best.pt", "last.pt")


@dataclass(frozen=True)
class RetentionReport:
    """What one pass removed and what the study's run folders hold now."""

    kept: tuple[int, ...]  # trial numbers whose weights are kept
    removed: tuple[int, ...]  # trial numbers whose weights this pass removed
    freed_bytes: int
    used_bytes: int  # all files under the kept and remaining run folders


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _folders(trials: Sequence[FrozenTrial]) -> dict[str, list[FrozenTrial]]:
    """Each run folder with the trials that wrote it: a retry resumes in its failed attempt's
    folder, so one folder may serve several trials and is counted once."""
    folders: dict[str, list[FrozenTrial]] = {}
    for trial in trials:
        if run_dir := trial_attrs.RUN_DIR.of(trial.user_attrs):
            folders.setdefault(run_dir, []).append(trial)
    return folders


def _folder_size(run_dir: str, users: list[FrozenTrial], sizes: dict[str, int]) -> int:
    """The folder's disk use; cached in `sizes` once its latest trial (a retry comes after its
    attempt) has finished, measured on every pass while that trial may still write to it."""
    if run_dir in sizes:
        return sizes[run_dir]
    size = _size(Path(run_dir))
    if max(users, key=lambda t: t.number).state in (TrialState.COMPLETE, TrialState.PRUNED):
        sizes[run_dir] = size
    return size


def _ranked(trials: Sequence[FrozenTrial], keep: int) -> tuple[set[int], list[tuple[FrozenTrial, str]]]:
    """The numbers of the `keep` best COMPLETE trials, and the finished others with their run folder."""
    if keep < 1:
        raise ValueError(f"keep_top must be at least 1 (the best trial is always kept), not {keep}")
    complete = sorted(
        (t for t in trials if t.state == TrialState.COMPLETE), key=lambda t: (value_of(t), t.number)
    )
    kept = {t.number for t in complete[:keep]}
    candidates = [
        (t, run_dir)
        for t in trials
        if t.number not in kept
        and t.state in (TrialState.COMPLETE, TrialState.PRUNED)
        and (run_dir := trial_attrs.RUN_DIR.of(t.user_attrs))
    ]
    return kept, candidates


def keep_top(
    trials: Sequence[FrozenTrial],
    keep: int,
    root: Path,
    sizes: dict[str, int] | None = None,
    pinned: Collection[Path | str] = (),
) -> tuple[RetentionReport, list[FrozenTrial]]:
    """Remove the weight files of finished trials outside the `keep` best COMPLETE ones.

    Only run folders inside `root` (the study's storage) are touched. Returns the report and the
    trials whose weights this pass removed (the caller marks them in the study). `sizes` caches the
    disk use of finished trials' folders between passes (a finished trial's folder changes only
    when this function removes its weights), so a pass walks only the running trials' folders.
    A trial whose folder holds one of the `pinned` files (resolved paths) keeps all its weights.
    """
    sizes = {} if sizes is None else sizes
    kept, candidates = _ranked(trials, keep)
    removed: list[FrozenTrial] = []
    freed = 0
    for trial, run_dir in candidates:
        folder = Path(run_dir)
        if not _inside(folder, root):
            continue
        files = [folder / name for name in WEIGHT_FILES if (folder / name).is_file()]
        if not files or any(f.resolve() in pinned for f in files):
            continue
        for f in files:
            freed += f.stat().st_size
            f.unlink()
        sizes.pop(run_dir, None)
        removed.append(trial)
    used = sum(_folder_size(run_dir, users, sizes) for run_dir, users in _folders(trials).items())
    report = RetentionReport(tuple(sorted(kept)), tuple(t.number for t in removed), freed, used)
    return report, removed


def keep_top_objects(
    trials: Sequence[FrozenTrial],
    keep: int,
    store: ObjectStore,
    root: Path,
    pinned: Collection[Path | str] = (),
) -> tuple[RetentionReport, list[FrozenTrial]]:
    """`keep_top` for a study kept in an object store: the weight objects of finished trials outside
    the `keep` best are deleted under the store's prefix (a trial's copy is `PREFIX/<its run folder's
    name>`, mirror.py), with this node's local copies in `root`. No key outside the prefix is
    deleted: a run folder whose name is no plain component is skipped. `used_bytes`: the objects
    under the trials' copies. A folder holding one of the `pinned` objects (URIs) keeps its weights."""
    kept, candidates = _ranked(trials, keep)
    objects = store.sizes()
    removed: list[FrozenTrial] = []
    freed = 0
    for trial, run_dir in candidates:
        try:
            folder = store.root.child(Path(run_dir).name)
        except StorageRefused:
            continue
        names = [name for name in WEIGHT_FILES if folder.child(name).uri in objects]
        if not names or any(folder.child(name).uri in pinned for name in names):
            continue
        for name in names:
            freed += objects.pop(folder.child(name).uri)
            store.delete(folder.child(name))
            (root / Path(run_dir).name / name).unlink(missing_ok=True)
        removed.append(trial)
    copies = {f"{store.root.uri}/{Path(d).name}/" for d in _folders(trials)}
    used = sum(size for uri, size in objects.items() if any(uri.startswith(c) for c in copies))
    report = RetentionReport(tuple(sorted(kept)), tuple(t.number for t in removed), freed, used)
    return report, removed
