"""Retention counts a run folder once when a failed attempt and its retry share it (real folders,
real Optuna trials)."""

from __future__ import annotations

from pathlib import Path

from optuna.trial import TrialState, create_trial

from tuner.policies.retention import keep_top

SIZES = {"best.pt": 1000, "last.pt": 1000, "config.yaml": 10, "metrics.jsonl": 20}
FOLDER = sum(SIZES.values())


def _trial(number: int, state: TrialState, value: float | None, run_dir: Path, **attrs):
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, size in SIZES.items():
        (run_dir / name).write_bytes(b"x" * size)
    t = create_trial(
        state=state,
        value=value,
        user_attrs={"run_dir": str(run_dir), **attrs},
        intermediate_values={} if state == TrialState.RUNNING else {25: 9.0},
    )
    t.number = number
    return t


def test_a_retry_and_its_failed_attempt_share_one_folder_counted_once(tmp_path):
    root = tmp_path / "study"
    attempt = _trial(0, TrialState.FAIL, None, root / "trial-0", needs_retry=True)
    other = _trial(1, TrialState.COMPLETE, 4.0, root / "trial-1")
    running_retry = create_trial(
        state=TrialState.RUNNING, user_attrs={"run_dir": str(root / "trial-0"), "retry_of": 0}
    )
    running_retry.number = 2
    sizes: dict[str, int] = {}
    report, _ = keep_top([attempt, other, running_retry], 1, root, sizes)
    assert report.used_bytes == 2 * FOLDER  # two folders, not three
    assert str(root / "trial-0") not in sizes  # its retry still writes there: measured every pass

    done_retry = _trial(2, TrialState.COMPLETE, 4.5, root / "trial-0", retry_of=0)  # it trained on
    report, removed = keep_top([attempt, other, done_retry], 1, root, sizes)
    assert [t.number for t in removed] == [2] and report.freed_bytes == 2000
    assert report.used_bytes == FOLDER + (FOLDER - 2000)
    assert sizes[str(root / "trial-0")] == FOLDER - 2000  # finished: cached once
