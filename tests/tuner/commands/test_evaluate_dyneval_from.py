"""`rnntune evaluate RUN/best.pt --dyneval-from STUDY`: dynamic evaluation with the settings of the
study's best COMPLETE trial (thesis §4.5, Table 2.6), on a hand-made study of a real checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests import s3_server
from tests.tuner.dyneval_checkpoint import quick_checkpoint
from tuner.cli import main
from tuner.space import SearchSpace
from tuner.sweeps.study.create import create_study

s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures

BEST = {
    "max_time_steps": 7,
    "dyneval_learning_rate": 5e-4,
    "dyneval_decay_rate": 2e-5,
    "dyneval_epsilon": 1e-3,
}
FAILED = {
    "max_time_steps": 3,
    "dyneval_learning_rate": 1e-6,
    "dyneval_decay_rate": 1e-2,
    "dyneval_epsilon": 1e-8,
}


def _trial(study: optuna.Study, params: dict, value: float | None, state: TrialState) -> None:
    """A trial with exactly `params`, sampled through the study's own space."""
    space = SearchSpace.from_dict(study.user_attrs["space_def"])
    study.enqueue_trial(params)
    trial = study.ask()
    assert space.suggest(trial) == params
    study.tell(trial, value, state=state)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("evaluate")
    checkpoint = quick_checkpoint(root)
    db = f"sqlite:///{root / 'studies.db'}"
    study = create_study(
        "dv", storage_url=db, space="dyneval", checkpoint=str(checkpoint), storage_path=root / "dv"
    )
    _trial(study, BEST, 3.0, TrialState.COMPLETE)
    _trial(study, FAILED, None, TrialState.FAIL)
    create_study(
        "empty", storage_url=db, space="dyneval", checkpoint=str(checkpoint), storage_path=root / "e"
    )
    return str(checkpoint), db


def _loss(capsys, *argv: str) -> float:
    assert main(["evaluate", *argv, "--split", "valid", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["loss"]


def test_it_evaluates_with_the_best_complete_trials_settings(setup, capsys):
    checkpoint, db = setup
    tuned = _loss(capsys, checkpoint, "--dyneval-from", "dv", "--db", db)
    by_hand = _loss(capsys, checkpoint, "--dyneval", *[f"--set={k}={v}" for k, v in BEST.items()])
    own = _loss(capsys, checkpoint, "--dyneval")  # the checkpoint's own settings
    assert tuned == pytest.approx(by_hand, rel=1e-9)
    assert abs(tuned - own) > 1e-4


def test_set_overrides_the_studys_setting(setup, capsys):
    checkpoint, db = setup
    tuned = _loss(capsys, checkpoint, "--dyneval-from", "dv", "--db", db, "--set", "max_time_steps=3")
    by_hand = _loss(
        capsys, checkpoint, "--dyneval", *[f"--set={k}={v}" for k, v in {**BEST, "max_time_steps": 3}.items()]
    )
    assert tuned == pytest.approx(by_hand, rel=1e-9)


def test_a_study_without_a_complete_trial_is_refused(setup, capsys):
    checkpoint, db = setup
    assert main(["evaluate", checkpoint, "--dyneval-from", "empty", "--db", db]) == 2
    assert "no COMPLETE trial with dynamic-evaluation settings" in capsys.readouterr().err
    assert main(["evaluate", checkpoint, "--dyneval-from", "nosuch", "--db", db]) == 2
    assert "no study named 'nosuch'" in capsys.readouterr().err


def test_finalize_points_to_evaluate_instead(setup, capsys):
    """Its trials train nothing and dynamic evaluation is deterministic: no seeds to rerun."""
    checkpoint, db = setup
    assert main(["finalize", "dv", "--db", db]) == 2
    assert f"rnntune evaluate {checkpoint} --dyneval-from dv" in capsys.readouterr().err


def test_an_s3_checkpoint_is_evaluated_as_its_local_file_is(setup, capsys, bucket, tmp_path, monkeypatch):
    """`rnntune evaluate s3://...` (a best.pt a study kept in an object store wrote), against an S3
    server over HTTP: downloaded for the load, the same number as the local file; a missing key
    and another scheme exit 2 naming the checkpoint."""
    from tuner.storage.object_store import ObjectStore, parse

    checkpoint, db = setup
    key = parse(f"s3://{bucket}/studies/dv/trial-0/best.pt", "test")
    ObjectStore(key).upload(Path(checkpoint), key)
    local = _loss(capsys, checkpoint, "--dyneval-from", "dv", "--db", db)
    assert main(["evaluate", key.uri, "--dyneval-from", "dv", "--db", db, "--split", "valid", "--json"]) == 0
    shown = capsys.readouterr()
    assert json.loads(shown.out)["loss"] == pytest.approx(local, rel=1e-12)
    assert f"tuned dynamic evaluation of {checkpoint}" in shown.err  # the study tuned the local file
    assert main(["evaluate", f"s3://{bucket}/studies/dv/trial-9/best.pt"]) == 2
    assert "trial-9/best.pt: cannot be read" in capsys.readouterr().err
    assert main(["evaluate", "wasb://elsewhere/best.pt"]) == 2
    assert "checkpoint: 'wasb://elsewhere/best.pt' is a wasb:// URI" in capsys.readouterr().err
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    assert main(["evaluate", "abfs://elsewhere/best.pt"]) == 2
    assert "abfs://elsewhere/best.pt: cannot be read (no Azure account" in capsys.readouterr().err
