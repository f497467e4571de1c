"""Study-wide checkpoint retention (`--keep-top N`) on real run folders."""

from __future__ import annotations

from pathlib import Path

import pytest
from optuna.trial import TrialState, create_trial

from tuner.policies.retention import keep_top


def _trial(number: int, state: TrialState, value: float | None, run_dir: Path):
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, size in (("best.pt", 1000), ("last.pt", 1000), ("config.yaml", 10), ("metrics.jsonl", 20)):
        (run_dir / name).write_bytes(b"x" * size)
    t = create_trial(
        state=state,
        value=value,
        user_attrs={"run_dir": str(run_dir)},
        intermediate_values={} if state == TrialState.RUNNING else {25: 9.0},
    )
    t.number = number
    return t


def test_keeps_the_n_best_and_frees_the_rest(tmp_path):
    root = tmp_path / "study"
    trials = [
        _trial(0, TrialState.COMPLETE, 4.5, root / "trial-0"),
        _trial(1, TrialState.COMPLETE, 4.1, root / "trial-1"),
        _trial(2, TrialState.PRUNED, None, root / "trial-2"),
        _trial(3, TrialState.COMPLETE, 4.3, root / "trial-3"),
        _trial(4, TrialState.RUNNING, None, root / "trial-4"),
        _trial(5, TrialState.FAIL, None, root / "trial-5"),
    ]
    report, removed = keep_top(trials, 2, root)
    assert report.kept == (1, 3)
    assert report.removed == (0, 2) == tuple(t.number for t in removed)
    assert report.freed_bytes == 4000
    for n in (0, 2):
        assert not (root / f"trial-{n}" / "best.pt").exists()
        assert (root / f"trial-{n}" / "config.yaml").is_file()  # still re-runnable
    for n in (1, 3, 4, 5):  # kept, running (may resume) and failed (may be retried)
        assert (root / f"trial-{n}" / "best.pt").is_file() and (root / f"trial-{n}" / "last.pt").is_file()
    assert report.used_bytes == 6 * 30 + 4 * 2000
    again, _ = keep_top(trials, 2, root)
    assert again.removed == () and again.freed_bytes == 0


def test_never_touches_folders_outside_the_storage_root(tmp_path):
    outside = _trial(0, TrialState.PRUNED, None, tmp_path / "elsewhere" / "trial-0")
    best = _trial(1, TrialState.COMPLETE, 4.0, tmp_path / "study" / "trial-1")
    report, _ = keep_top([outside, best], 1, tmp_path / "study")
    assert report.removed == () and (tmp_path / "elsewhere" / "trial-0" / "best.pt").is_file()


def test_keep_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="at least 1"):
        keep_top([], 0, tmp_path)


def test_cached_sizes_give_the_same_disk_use_as_a_fresh_walk(tmp_path):
    root = tmp_path / "study"
    trials = [
        _trial(0, TrialState.COMPLETE, 4.5, root / "trial-0"),
        _trial(1, TrialState.COMPLETE, 4.1, root / "trial-1"),
        _trial(2, TrialState.RUNNING, None, root / "trial-2"),
    ]
    sizes: dict[str, int] = {}
    first, _ = keep_top(trials, 2, root, sizes)
    assert str(root / "trial-2") not in sizes  # a running trial is measured on every pass
    (root / "trial-2" / "metrics.jsonl").write_bytes(b"x" * 500)  # it goes on writing
    trials.append(_trial(3, TrialState.COMPLETE, 4.0, root / "trial-3"))  # displaces trial 0
    second, removed = keep_top(trials, 2, root, sizes)
    assert [t.number for t in removed] == [0]
    fresh, _ = keep_top(trials, 2, root)
    assert second.used_bytes == fresh.used_bytes == first.used_bytes + 2030 + 480 - 2000


def test_a_checkpoint_another_study_evaluates_is_never_removed(tmp_path):
    """A dynamic-evaluation study of trial 0's model pins its weights: retention keeps them though
    the trial is outside the best N (the other study would lose its model)."""
    root = tmp_path / "study"
    trials = [
        _trial(0, TrialState.COMPLETE, 4.5, root / "trial-0"),
        _trial(1, TrialState.COMPLETE, 4.1, root / "trial-1"),
        _trial(2, TrialState.COMPLETE, 4.6, root / "trial-2"),
    ]
    pinned = {(root / "trial-0" / "best.pt").resolve()}
    report, _ = keep_top(trials, 1, root, pinned=pinned)
    assert report.removed == (2,)
    assert (root / "trial-0" / "best.pt").is_file() and (root / "trial-0" / "last.pt").is_file()


def test_the_pins_are_the_checkpoints_of_the_databases_studies(tmp_path):
    import optuna

    from tuner.spec.sweep_spec import validate
    from tuner.storage import study_attrs
    from tuner.storage.study import open_storage
    from tuner.sweeps.dyneval.study import referenced_checkpoints

    storage = open_storage(f"sqlite:///{tmp_path / 's.db'}")
    model = tmp_path / "study" / "trial-0" / "best.pt"
    evaluating = optuna.create_study(study_name="dyn", storage=storage)
    evaluating.set_user_attr(
        study_attrs.SPEC, validate({"space": "dyneval", "checkpoint": str(model)}).stored()
    )
    trained = optuna.create_study(study_name="trained", storage=storage)
    trained.set_user_attr(study_attrs.SPEC, validate({"space": "tiny"}).stored())
    optuna.create_study(study_name="foreign", storage=storage).set_user_attr(
        study_attrs.SPEC, {"version": 99}
    )
    assert referenced_checkpoints(storage) == frozenset({model.resolve()})
    in_bucket = optuna.create_study(study_name="dyn-s3", storage=storage)  # an object by its URI
    key = "s3://models/study/trial-1/best.pt"
    in_bucket.set_user_attr(study_attrs.SPEC, validate({"space": "dyneval", "checkpoint": key}).stored())
    assert referenced_checkpoints(storage) == frozenset({model.resolve(), key})
