"""Finalisation of a study kept in an object store (moto's S3 server over HTTP): a trial's config
comes from its run folder's copy under the study's prefix when the local folder is gone, and from
nowhere else. The end-to-end run (upload of the reruns) is in tests/tuner/commands/test_sweep_object_store.py."""

from __future__ import annotations

import pytest
import yaml

from tests import s3_server
from tests.tuner.sweeps.finalize.test_rerun import _planted
from trainer import make_config
from tuner.storage.object_store import ObjectStore, parse
from tuner.sweeps.finalize import rerun as finalize

s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures


def _put(tmp_path, store: ObjectStore, uri: str, config: dict) -> None:
    local = tmp_path / "upload.yaml"
    local.write_text(yaml.safe_dump(config))
    store.upload(local, parse(uri, "t"))


def test_the_config_is_read_from_the_study_prefix_when_the_run_folder_is_gone(tmp_path, bucket):
    where = parse(f"s3://{bucket}/studies/fin", "t")
    store = ObjectStore(where)
    saved = {**make_config({"hidden_size": 24, "learning_rate": 0.003}).to_dict(), "run_dir": "x"}
    _put(tmp_path, store, f"{where.uri}/trial-0/config.yaml", saved)
    study = _planted(tmp_path, tmp_path / "node-a" / "studies" / "fin" / "trial-0")  # another node's path
    storage = tmp_path / "studies" / "fin"
    config = finalize.source_config(study, study.trials[0], storage, where)
    assert config["hidden_size"] == 24 and config["learning_rate"] == pytest.approx(0.003)
    # Without the object store location, or with no copy there, the config is rebuilt from the space.
    rebuilt = finalize.source_config(study, study.trials[0], storage)
    assert rebuilt["hidden_size"] != 24 and rebuilt["learning_rate"] == pytest.approx(0.002)
    other = parse(f"s3://{bucket}/studies/other", "t")
    assert finalize.source_config(study, study.trials[0], storage, other)["hidden_size"] != 24


def test_a_planted_run_dir_never_reads_a_key_outside_the_prefix(tmp_path, bucket):
    """Only the run folder's last name is used as a key component: `..` reads nothing."""
    where = parse(f"s3://{bucket}/studies/fin", "t")
    store = ObjectStore(where)
    planted = {**make_config({"hidden_size": 40}).to_dict()}
    _put(tmp_path, store, f"s3://{bucket}/studies/config.yaml", planted)
    study = _planted(tmp_path, "/anywhere/..")
    config = finalize.source_config(study, study.trials[0], tmp_path / "studies" / "fin", where)
    assert config["hidden_size"] != 40


def test_the_command_refuses_a_bucket_that_does_not_answer_before_ray_starts(tmp_path, s3_env, capsys):
    from tuner.cli import main
    from tuner.storage import study_attrs

    study = _planted(tmp_path, tmp_path / "trial-0")
    study_attrs.STORAGE_PATH.write(study, "s3://no-such-bucket/studies/planted")
    db = f"sqlite:///{tmp_path / 'planted.sqlite'}"
    assert main(["finalize", "planted", "--top", "1", "--seeds", "1", "--db", db]) == 2
    assert "storage_path: bucket 'no-such-bucket' does not exist" in capsys.readouterr().err
