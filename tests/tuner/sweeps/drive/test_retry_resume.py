"""A retry whose driver died between enqueueing it and asking it (real Optuna on SQLite, a real
process killed outright) resumes from its attempt's run folder, `last.pt` and curve."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS
from tuner.space import SearchSpace
from tuner.storage.study import fail_zombies, load_study
from tuner.sweeps.drive.searcher import StudySearcher
from tuner.sweeps.study.create import create_study

CURVE = {10: 5.5, 20: 5.0}

# Runs the searcher's own retry path, killed (SIGKILL) the moment it asks Optuna for the trial it
# has just enqueued.
CRASH = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import optuna
    from tuner.space import SearchSpace
    from tuner.storage.study import load_study
    from tuner.sweeps.drive.searcher import StudySearcher

    study = load_study("retry", sys.argv[1])
    space = SearchSpace.from_dict(study.user_attrs["space_def"])
    searcher = StudySearcher(study, space, Path(sys.argv[2]), budget=3)
    optuna.Study.ask = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    searcher.suggest("ray-crash")
    """
)


def test_waiting_retry_left_by_a_crash_resumes_from_its_attempt(tmp_path):
    db, root = f"sqlite:///{tmp_path / 's.db'}", tmp_path / "storage"
    create_study(
        "retry", storage_url=db, space="tiny", n_trials=3, storage_path=root, overrides={"set": TINY_SETTINGS}
    )
    study = load_study("retry", db)
    space = SearchSpace.from_dict(study.user_attrs["space_def"])
    attempt = study.ask()
    params = space.suggest(attempt)
    run_dir = root / f"trial-{attempt.number}"
    run_dir.mkdir(parents=True)
    (run_dir / "last.pt").write_bytes(b"weights at step 20")
    attempt.set_user_attr("run_dir", str(run_dir))
    for step, value in CURVE.items():
        attempt.report(value, step)
    assert fail_zombies(study, "driver died", db) == [attempt.number]

    crash = subprocess.run([sys.executable, "-c", CRASH, db, str(root)], cwd=Path.cwd())
    assert crash.returncode == -9
    waiting = [t for t in load_study("retry", db).get_trials() if t.state == TrialState.WAITING]
    assert [t.user_attrs.get("retry_of") for t in waiting] == [attempt.number]  # enqueued, never asked

    resumed = StudySearcher(load_study("retry", db), space, root, budget=3)
    config = resumed.suggest("ray-resumed")
    trials = load_study("retry", db).get_trials()
    retry = trials[config["trial_number"]]
    assert retry.number == waiting[0].number and retry.state == TrialState.RUNNING
    assert config["trainer"]["run_dir"] == str(run_dir) == retry.user_attrs["run_dir"]
    assert (Path(config["trainer"]["run_dir"]) / "last.pt").read_bytes() == b"weights at step 20"
    assert retry.intermediate_values == CURVE and retry.params == params
    assert [t.number for t in trials if t.user_attrs.get("retry_of") == attempt.number] == [retry.number]
