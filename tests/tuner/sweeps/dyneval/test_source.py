"""The model of a dynamic-evaluation study as a local file: an `s3://` object downloaded (moto's S3
server over HTTP) into a temporary folder removed afterwards; a local path as it is."""

from __future__ import annotations

import pytest

from tests import s3_server
from tuner.storage.object_store import KeyRefused, ObjectStore, StorageRefused, local_copy, parse
from tuner.sweeps.dyneval import source

s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures


def test_an_object_is_downloaded_for_the_context_only(tmp_path, bucket):
    (tmp_path / "best.pt").write_bytes(b"weights")
    key = parse(f"s3://{bucket}/studies/s/trial-3/best.pt", "t")
    ObjectStore(key).upload(tmp_path / "best.pt", key)
    with local_copy(f"s3://{bucket}/studies/s/trial-3/best.pt") as local:
        assert local.name == "best.pt" and local.read_bytes() == b"weights"
    assert not local.exists() and not local.parent.exists()
    with pytest.raises(KeyRefused), local_copy(f"s3://{bucket}/studies/s/missing.pt"):
        pass


def test_shown_normalises_a_key_and_makes_a_path_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert source.shown("s3://models/a/best.pt/") == "s3://models/a/best.pt"
    assert source.shown("run/best.pt") == str(tmp_path / "run" / "best.pt")
    with pytest.raises(StorageRefused, match=r"checkpoint: .*wasb:// URI"):
        source.shown("wasb://models/a/best.pt")
    with local_copy("run/best.pt") as local:  # a local path is not copied
        assert local == tmp_path / "run" / "best.pt"
