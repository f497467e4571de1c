"""`rnntune sweep --storage gs://...` and `--storage abfs://...` end to end, each against its store's
server over HTTP (fake-gcs-server, Azurite): the trials' run folders and Ray Tune's state land in the
bucket, retention deletes there, and the API streams the best checkpoint from the bucket alone with a
matching SHA-256. The object-store rules common to every scheme are covered on S3 in
test_sweep_object_store.py; these runs check that the other stores work through the same path (and,
for Azure, that the account key pickled into Ray's state is not in it)."""

from __future__ import annotations

import shutil

import httpx
import pytest
from optuna.trial import TrialState

import trainer
from tests import azure_server, gcs_server
from tests.tuner.api.fixtures import live_server
from tests.tuner.commands.object_downloads import best_download
from tests.tuner.sweep_process import finish, launch, tiny_set_args
from tuner.api import ApiSettings
from tuner.storage.object_store import ObjectStore, parse
from tuner.storage.study import load_study

pytestmark = pytest.mark.slow

gcs_endpoint, gcs_env, gcs_bucket = gcs_server.gcs_endpoint, gcs_server.gcs_env, gcs_server.gcs_bucket
azure_endpoint, azure_env, azure_container = (
    azure_server.azure_endpoint,
    azure_server.azure_env,
    azure_server.azure_container,
)

BUCKETS = {"gs": "gcs_bucket", "abfs": "azure_container"}  # each store's fixture making a new bucket


@pytest.mark.parametrize("scheme", list(BUCKETS))
def test_a_cli_sweep_keeps_its_checkpoints_in_the_store_and_the_api_serves_them(tmp_path, scheme, request):
    bucket = request.getfixturevalue(BUCKETS[scheme])
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    where = f"{scheme}://{bucket}/studies/other"
    args = ["--name", "other", "--trials", "3", "--parallel", "2", "--db", db, "--seed", "3"]
    args += ["--storage", where, "--keep-top", "1"]
    proc, log = launch(tmp_path, [*args, *tiny_set_args()])
    assert finish(proc, log, 600) == 0, log.read_text()
    assert "study other: finished, 3/3 trials" in log.read_text()

    study = load_study("other", db)
    assert study.user_attrs["storage_path"] == where
    best = study.best_trial
    store = ObjectStore(parse(where, "test"))
    objects = store.sizes()
    for t in study.trials:
        assert t.state == TrialState.COMPLETE
        folder = f"{where}/trial-{t.number}"
        assert t.user_attrs["checkpoint"] == f"{folder}/best.pt"
        assert f"{folder}/metrics.jsonl" in objects
        assert (f"{folder}/best.pt" in objects) == (t.number == best.number)  # --keep-top 1
    ray_state = [uri for uri in objects if uri.startswith(f"{where}/ray/")]
    assert ray_state  # Ray Tune's own state, there too
    if scheme == "abfs":  # the pickled filesystem in Ray's state carries no account key
        secret = azure_server.KEY.encode()
        assert not any(secret in b"".join(store.chunks(parse(uri, "t"))) for uri in ray_state)

    shutil.rmtree(tmp_path / "studies" / "other")  # the API reads the bucket alone
    settings = ApiSettings(
        db_url=db, storage_root=tmp_path / "studies", object_root=parse(f"{scheme}://{bucket}/studies", "t")
    )
    with live_server(settings) as url:
        download = best_download(url, "other", store, parse(f"{where}/trial-{best.number}/best.pt", "t"))
    (tmp_path / "best.pt").write_bytes(download.content)
    _model, config = trainer.load_checkpoint(tmp_path / "best.pt")
    assert config.learning_rate == pytest.approx(best.params["learning_rate"])

    # The same bucket and prefix named as S3 is another store: the server refuses to serve it.
    elsewhere = ApiSettings(
        db_url=db, storage_root=tmp_path / "studies", object_root=parse(f"s3://{bucket}/studies", "t")
    )
    with live_server(elsewhere) as url:
        refused = httpx.get(f"{url}/studies/other/best/checkpoint", timeout=60)
        assert refused.status_code == 404 and "storage_path" in refused.text
