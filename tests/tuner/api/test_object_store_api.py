"""A server whose `--storage` is an object store (`s3://BUCKET/PREFIX`, S3 over HTTP from moto):
studies created through it keep their checkpoints there; one stored elsewhere is refused."""

from __future__ import annotations

import httpx
import optuna

from tests import s3_server
from tests.tuner.api.fixtures import live_server
from tuner.api import ApiSettings
from tuner.storage import study_attrs

s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures
TOKEN = "object-store-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_studies_created_through_the_api_live_under_its_object_root(tmp_path, bucket, monkeypatch):
    db = f"sqlite:///{tmp_path / 's.db'}"
    monkeypatch.setenv("RNNTUNE_STORAGE", f"s3://{bucket}/root/")
    monkeypatch.setenv("RNNTUNE_API_TOKEN", TOKEN)
    monkeypatch.chdir(tmp_path)
    settings = ApiSettings.from_env(db)
    assert settings.object_root is not None and settings.object_root.uri == f"s3://{bucket}/root"
    assert settings.storage_root == (tmp_path / "studies").resolve()  # the run folders' local copies
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        created = client.post("/studies", json={"name": "api-s3", "space": "tiny"}, headers=AUTH)
        assert created.status_code == 201, created.text
        assert client.get("/studies/api-s3").json()["storage_path"] == f"s3://{bucket}/root/api-s3"

    study = optuna.load_study(study_name="api-s3", storage=db)
    study_attrs.STORAGE_PATH.write(study, f"s3://{bucket}/elsewhere/api-s3")  # the database is data
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        refused = client.post("/studies/api-s3/start", headers=AUTH)
        assert refused.status_code == 409, refused.text
        assert (
            f"s3://{bucket}/elsewhere/api-s3" in refused.text
            and "outside this server's storage root" in refused.text
        )
