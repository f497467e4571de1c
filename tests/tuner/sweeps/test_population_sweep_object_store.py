"""A PBT sweep kept in an object store (`--storage s3://...`, S3 over HTTP from moto): members copy
each other's checkpoints through Ray Tune's storage in the bucket; stopped after a copy, its local
run folders deleted (as if resumed on another machine), the sweep resumes from the bucket alone."""

from __future__ import annotations

import re
import shutil
import signal

import pytest
from optuna.trial import TrialState

from tests import s3_server
from tests.tuner.sweep_process import finish, launch, tiny_set_args, trials, wait_until
from tuner.storage import trial_attrs
from tuner.storage.object_store import ObjectStore, parse
from tuner.storage.study import load_study

pytestmark = pytest.mark.slow
s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures
MAX_STEPS, EVERY, INTERVAL = 60, 10, 20


def _copied(ts) -> bool:
    return any(
        s["from_trial"] is not None for t in ts for s in trial_attrs.PBT_HISTORY.of(t.user_attrs) or []
    )


def test_a_pbt_sweep_copies_through_the_bucket_and_resumes_from_it_alone(tmp_path, bucket):
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    where = f"s3://{bucket}/pop"
    args = ["--name", "pop", "--db", db, "--scheduler", "pbt", "--trials", "4", "--parallel", "4"]
    args += ["--cpus-per-trial", "0.5", "--perturbation-interval", str(INTERVAL), "--sampler", "random"]
    args += ["--seed", "5", "--storage", where, *tiny_set_args(max_steps=MAX_STEPS, eval_every=EVERY)]
    proc, log = launch(tmp_path, args)
    wait_until(lambda: _copied(trials(db, "pop")), proc, log, 300)
    proc.send_signal(signal.SIGTERM)
    assert finish(proc, log, 120) == 130, log.read_text()
    objects = ObjectStore(parse(where, "test")).sizes()
    # The copies went through Ray's checkpoints, which Ray Tune wrote in the bucket.
    assert any("/ray/" in uri and "/checkpoint_" in uri and uri.endswith("/last.pt") for uri in objects)
    before = {t.number: t for t in load_study("pop", db).trials}
    assert len(before) == 4 and all(t.state == TrialState.FAIL for t in before.values())

    shutil.rmtree(tmp_path / "studies" / "pop")  # nothing local is left: the bucket holds the study
    proc, log = launch(tmp_path, ["--resume", "pop", "--db", db])
    assert finish(proc, log, 600) == 0, log.read_text()
    # The driver read each member's start off its copy in the bucket (no folder is left here): all
    # resume past the copy at INTERVAL, and first meet past every start, as a local resume does.
    note = re.search(
        r"members start from steps \[([\d, ]+)\].*first perturbation is at step (\d+)", log.read_text()
    )
    assert note is not None, log.read_text()
    starts = [int(s) for s in note.group(1).split(", ")]
    assert len(starts) == 4 and min(starts) >= INTERVAL and int(note.group(2)) > max(starts), note.group(0)
    study = load_study("pop", db)
    done = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(done) == 4 and {t.user_attrs["retry_of"] for t in done} == set(before)
    objects = ObjectStore(parse(where, "test")).sizes()
    grid = list(range(EVERY, MAX_STEPS + 1, EVERY))
    for member in done:
        attempt = before[member.user_attrs["retry_of"]]
        # The retry went on from the copy in the bucket: its curve continues the attempt's, no gap.
        assert all(member.intermediate_values[s] == v for s, v in attempt.intermediate_values.items())
        assert sorted(member.intermediate_values) == grid
        assert member.user_attrs["checkpoint"].startswith(f"{where}/trial-")
        assert member.user_attrs["checkpoint"] in objects
