"""`rnntune sweep` argument handling that is decided before Ray starts."""

from __future__ import annotations

import optuna
import pytest

from tests import s3_server
from tuner import python_api
from tuner.api.settings import ApiSettings
from tuner.cli import main
from tuner.errors import StudyError
from tuner.spec import SweepSpec
from tuner.storage.object_store import ObjectStore, parse
from tuner.sweeps.drive.run import claim_objects
from tuner.sweeps.study.create import create_study

s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures


def _done_study(db: str, tmp_path) -> None:
    """A study whose one trial is done: resuming it stores its spec and needs no Ray."""
    study = create_study("x", storage_url=db, space="tiny", n_trials=1, storage_path=tmp_path / "x")
    dist = optuna.distributions.FloatDistribution(0.001, 0.004, log=True)
    study.add_trial(
        optuna.trial.create_trial(
            params={"learning_rate": 0.002}, distributions={"learning_rate": dist}, value=5.0
        )
    )


def test_resume_refuses_study_options_by_name(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    _done_study(db, tmp_path)
    assert main(["sweep", "--resume", "x", "--space", "lstm", "--sampler", "tpe", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "--sampler, --space: cannot change when resuming" in err
    assert SweepSpec.of(optuna.load_study(study_name="x", storage=db).user_attrs).sampler != "tpe"


def test_resume_keep_top_takes_effect(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    _done_study(db, tmp_path)
    assert main(["sweep", "--resume", "x", "--keep-top", "3", "--db", db]) == 0
    assert "study x: finished" in capsys.readouterr().out
    assert SweepSpec.of(optuna.load_study(study_name="x", storage=db).user_attrs).keep_top == 3


def test_unknown_study_and_bad_overrides_exit_2(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert main(["sweep", "--resume", "ghost", "--db", db]) == 2
    assert "no study named 'ghost'" in capsys.readouterr().err
    assert main(["sweep", "--db", db, "--name", "bad", "--range", "learning_rate=0.004:0.001"]) == 2
    assert "parameter learning_rate: low (0.004) must be below high (0.001)" in capsys.readouterr().err
    assert main(["sweep", "--db", db, "--name", "bad", "--set", "num_layers=0"]) == 2
    assert "num_layers" in capsys.readouterr().err


def test_missing_dataset_folder_is_refused_before_the_study_exists(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    code = main(
        ["sweep", "--db", db, "--name", "ptb", "--space", "lstm", "--set", f"data_dir={tmp_path / 'nope'}"]
    )
    assert code == 2
    assert "does not exist; pass --set data_dir=PATH" in capsys.readouterr().err
    assert main(["sweep", "--resume", "ptb", "--db", db]) == 2
    assert "no study named 'ptb'" in capsys.readouterr().err


def test_an_unsupported_or_unreachable_store_is_refused_not_made_a_local_folder(
    tmp_path, capsys, monkeypatch, s3_env
):
    """`--storage s3://bar/studies` once finished with exit 0, every checkpoint in a local folder
    named `s3:`; each way in now refuses a URI of another scheme, or a bucket that is not there,
    naming its field, before a study or folder exists."""
    monkeypatch.chdir(tmp_path)
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert main(["sweep", "--db", db, "--name", "s", "--space", "tiny", "--storage", "s3://bar/studies"]) == 2
    assert "--storage: bucket 'bar' does not exist; set AWS_ENDPOINT_URL_S3" in capsys.readouterr().err
    assert (
        main(["sweep", "--db", db, "--name", "s", "--space", "tiny", "--storage", "wasb://bar/studies"]) == 2
    )
    assert (
        "--storage: 'wasb://bar/studies' is a wasb:// URI, which rnntune does not support"
        in capsys.readouterr().err
    )
    with pytest.raises(StudyError, match=r"^storage: 'hdfs://b/p' is a hdfs:// URI"):
        python_api.create("s", {"space": "tiny"}, db=db, storage="hdfs://b/p")
    monkeypatch.setenv("RNNTUNE_STORAGE", "file://bar/root")
    with pytest.raises(StudyError, match=r"^RNNTUNE_STORAGE: 'file://bar/root' is a file:// URI"):
        ApiSettings.from_env(db)
    code = main(
        ["sweep", "--db", db, "--name", "d", "--space", "dyneval", "--checkpoint", "s3://bar/s/best.pt"]
    )
    assert code == 2
    assert "checkpoint: s3://bar/s/best.pt is not a readable rnntune checkpoint" in capsys.readouterr().err
    assert optuna.study.get_all_study_names(db) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite"]


def test_a_study_in_an_object_store_keeps_its_uri_and_its_prefix(tmp_path, bucket, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    python_api.create("s", {"space": "tiny"}, db=db, storage=f"s3://{bucket}/studies/s/")
    assert (
        optuna.load_study(study_name="s", storage=db).user_attrs["storage_path"] == f"s3://{bucket}/studies/s"
    )
    claim_objects(ObjectStore(parse(f"s3://{bucket}/studies/s", "storage")), "s")
    code = main(
        ["sweep", "--db", db, "--name", "t", "--space", "tiny", "--storage", f"s3://{bucket}/studies/s"]
    )
    assert code == 2
    assert f"storage s3://{bucket}/studies/s belongs to study 's'" in capsys.readouterr().err
