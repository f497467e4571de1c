"""A server whose `--storage` is an object store (`s3://BUCKET/PREFIX`, S3 over HTTP from moto):
studies created through it keep their checkpoints there; one stored elsewhere is refused; a
dynamic-evaluation model in the bucket is held to the object root; such a study can be finalized."""

from __future__ import annotations

import httpx
import optuna

from tests import s3_server
from tests.tuner.api.fixtures import live_server
from tuner.api import ApiSettings
from tuner.api.routes import finalize as finalize_routes
from tuner.api.routes.studies import checkpoint_problem
from tuner.space import load_space
from tuner.storage import study_attrs
from tuner.storage.object_store import ObjectStore, parse
from tuner.sweeps.finalize.launch import FinalizeLauncher

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


def test_a_dyneval_checkpoint_in_the_bucket_must_lie_inside_the_object_root(tmp_path, bucket):
    """REST creation loads the model it names: an `s3://` key only inside the server's object root;
    one there is downloaded and checked as a local file is (its dataset inside the data roots)."""
    from tests.tuner.dyneval_checkpoint import quick_checkpoint

    model = quick_checkpoint(tmp_path / "model")
    key = parse(f"s3://{bucket}/root/trained/trial-0/best.pt", "t")
    ObjectStore(key).upload(model, key)
    settings = ApiSettings(
        db_url=f"sqlite:///{tmp_path / 's.db'}",
        storage_root=tmp_path / "studies",
        object_root=parse(f"s3://{bucket}/root", "t"),
        data_roots=(tmp_path / "model" / "data",),
    )
    outside = f"s3://{bucket}/elsewhere/trial-0/best.pt"
    with live_server(settings) as url:
        refused = httpx.post(
            f"{url}/studies", json={"name": "dv", "space": "dyneval", "checkpoint": outside}, timeout=30
        )
        assert refused.status_code == 422, refused.text
        assert "body.checkpoint: must be a key inside the server's object root" in refused.text
        inside = httpx.post(  # inside the root, it is loaded: a missing object is no checkpoint
            f"{url}/studies",
            json={"name": "dv", "space": "dyneval", "checkpoint": f"s3://{bucket}/root/x/best.pt"},
            timeout=30,
        )
        assert inside.status_code == 422 and "checkpoint: s3://" in inside.text, inside.text
        assert "is not a readable rnntune checkpoint" in inside.text
        created = httpx.post(
            f"{url}/studies", json={"name": "dv", "space": "dyneval", "checkpoint": key.uri}, timeout=30
        )
        assert created.status_code == 201, created.text
    study = optuna.load_study(study_name="dv", storage=settings.db_url)
    assert study.user_attrs["spec"]["checkpoint"] == key.uri
    assert study.user_attrs["storage_path"] == f"s3://{bucket}/root/dv"


def test_finalize_of_a_study_in_the_bucket_launches_with_its_location(tmp_path, bucket, monkeypatch):
    """No 409 for a study kept in the object store: the run gets the study's `s3://` location (its
    reruns uploaded there) and logs in the server's local folder for the study."""
    db = f"sqlite:///{tmp_path / 's.db'}"
    settings = ApiSettings(
        db_url=db, storage_root=tmp_path / "studies", object_root=parse(f"s3://{bucket}/root", "t")
    )
    study = optuna.create_study(study_name="fin-s3", storage=db)
    study.set_user_attr(study_attrs.SPACE_DEF, load_space("tiny").to_dict())
    study_attrs.STORAGE_PATH.write(study, f"s3://{bucket}/root/fin-s3")
    study.add_trial(optuna.trial.create_trial(params={}, distributions={}, value=1.0))
    launched: list[list[str]] = []
    original = FinalizeLauncher.command

    def command(*args) -> list[str]:
        launched.append(original(*args))
        return ["spaces"]  # a quick command in its place: what is tested is what the route asks for

    monkeypatch.setattr(finalize_routes.FinalizeLauncher, "command", staticmethod(command))
    with live_server(settings) as url:
        started = httpx.post(f"{url}/studies/fin-s3/finalize", json={"top": 1, "seeds": 1}, timeout=30)
        assert started.status_code == 202, started.text
    assert launched[0][-2:] == ["--storage", f"s3://{bucket}/root/fin-s3"]
    assert started.json()["process"]["log"] == str(tmp_path / "studies" / "fin-s3" / "finalize.log")


def test_which_checkpoints_a_request_may_name(tmp_path):
    """Plain values: a local file inside the storage root; an `s3://` key inside the object root,
    whole components only; a server without an object root takes no key."""
    root = parse("s3://models/root", "t")
    local = ApiSettings(db_url="sqlite://", storage_root=tmp_path)
    objects = ApiSettings(db_url="sqlite://", storage_root=tmp_path, object_root=root)
    assert checkpoint_problem(str(tmp_path / "run" / "best.pt"), local) is None
    assert "inside the server's storage root" in (checkpoint_problem("/etc/passwd", local) or "")
    assert "serve with --storage one of s3://" in (
        checkpoint_problem("s3://models/root/best.pt", local) or ""
    )
    assert checkpoint_problem("s3://models/root/study/trial-0/best.pt", objects) is None
    for outside in ("s3://models/rootless/best.pt", "s3://other/root/best.pt", "s3://models/root/../x.pt"):
        assert "inside the server's object root (s3://models/root)" in (
            checkpoint_problem(outside, objects) or ""
        )
    # The same bucket and prefix in another store is another place.
    assert "object root (s3://models/root)" in (
        checkpoint_problem("gs://models/root/x/best.pt", objects) or ""
    )
    assert "or a key inside its object root" in (checkpoint_problem("/etc/passwd", objects) or "")
