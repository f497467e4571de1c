"""`s3://`, `gs://` and `abfs://BUCKET/PREFIX` locations: parsing, the confinement of keys read from a
study, and the store against a real server of each over HTTP (moto's S3 server mode,
fake-gcs-server, Azurite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import azure_server, gcs_server, s3_server
from tuner.errors import NotFound, StudyError
from tuner.storage.object_store import (
    KeyRefused,
    ObjectLocation,
    ObjectStore,
    StorageRefused,
    location,
    parse,
)

s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures
gcs_endpoint, gcs_env, gcs_bucket = gcs_server.gcs_endpoint, gcs_server.gcs_env, gcs_server.gcs_bucket
azure_endpoint, azure_env = azure_server.azure_endpoint, azure_server.azure_env
azure_container = azure_server.azure_container

BUCKETS = {"s3": "bucket", "gs": "gcs_bucket", "abfs": "azure_container"}  # each scheme's new-bucket fixture


@pytest.fixture(params=list(BUCKETS))
def new_bucket(request) -> tuple[str, str]:
    """(scheme, a new bucket) on the session's server of that scheme."""
    return request.param, request.getfixturevalue(BUCKETS[request.param])


def test_an_s3_or_gs_uri_parses_to_bucket_and_prefix():
    assert parse("s3://bucket/studies/x/", "--storage") == ObjectLocation("bucket", "studies/x")
    assert parse("S3://bucket", "--storage").uri == "s3://bucket"
    assert parse("gs://my_bucket/studies/x", "--storage") == ObjectLocation("my_bucket", "studies/x", "gs")
    assert parse("gs://b-1/x", "--storage").child("trial-0").uri == "gs://b-1/x/trial-0"
    assert parse("gcs://b-1/x", "--storage").uri == "gs://b-1/x"  # pyarrow's other name for GCS
    assert parse("abfs://box-1/x", "--storage") == ObjectLocation("box-1", "x", "abfs")
    assert parse("abfss://box-1/x", "--storage").uri == "abfs://box-1/x"  # pyarrow's TLS name
    assert parse("az://box-1/x", "--storage").uri == "abfs://box-1/x"  # adlfs's name
    assert location("s3://bucket/p", "storage") == ObjectLocation("bucket", "p")
    assert location("~/runs", "storage") == Path.home() / "runs"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "hdfs://b/p",
            r"^--storage: 'hdfs://b/p' is a hdfs:// URI, which rnntune does not support; "
            r"allowed: a local folder or one of s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, abfs://BUCKET/PREFIX",
        ),
        ("s3://B_x/p", r"^--storage: 's3://B_x/p' names no valid bucket \(3-63 of a-z 0-9 \. -\)"),
        ("s3://b_x/p", r"^--storage: 's3://b_x/p' names no valid bucket"),  # S3 takes no underscore
        ("gs://B_x/p", r"^--storage: 'gs://B_x/p' names no valid bucket \(3-63 of a-z 0-9 \. _ -\)"),
        (
            "abfs://a--b/p",
            r"^--storage: 'abfs://a--b/p' names no valid bucket \(a container: 3-63 of a-z 0-9 -",
        ),
        (  # the account named in the URI, as pyarrow's from_uri takes it: rnntune reads it from the environment
            "abfs://box@acct.dfs.core.windows.net/p",
            r"names no valid bucket .*the account comes from AZURE_STORAGE_ACCOUNT_NAME",
        ),
        ("s3://bucket/a/../b", r"^--storage: .* has an empty, `.` or `..` component"),
        ("s3://bucket/a//b", r"^--storage: .* has an empty"),
    ],
)
def test_bad_locations_are_refused_naming_the_field_and_the_allowed_forms(value, message):
    with pytest.raises(StorageRefused, match=message):
        parse(value, "--storage")
    assert issubclass(StorageRefused, StudyError)


def test_keys_outside_the_prefix_are_refused():
    study = ObjectLocation("bucket", "studies/x")
    assert (
        study.confine("s3://bucket/studies/x/trial-0/best.pt", "checkpoint").prefix
        == "studies/x/trial-0/best.pt"
    )
    for outside in (
        "s3://bucket/studies/x-other/trial-0/best.pt",  # a sibling prefix sharing the name's start
        "s3://bucket/studies/y/trial-0/best.pt",
        "s3://other/studies/x/trial-0/best.pt",
        "s3://bucket/studies/x/../y/best.pt",
        "gs://bucket/studies/x/trial-0/best.pt",  # the same bucket and prefix in another store
        "/studies/x/trial-0/best.pt",
        "",
        None,
    ):
        with pytest.raises(KeyRefused, match=r"^checkpoint: "):
            study.confine(outside, "checkpoint")
    assert issubclass(KeyRefused, NotFound)
    for name in ("..", ".", "", "a/b"):
        with pytest.raises(StorageRefused):
            study.child(name)


def test_the_store_lists_reads_downloads_and_deletes_only_under_its_prefix(new_bucket, tmp_path):
    scheme, bucket = new_bucket
    store = ObjectStore(parse(f"{scheme}://{bucket}/studies/x", "--storage"))
    store.check("--storage")
    weights = bytes(range(256)) * 40_000  # 10 MB: more than one part or chunk of an upload
    (tmp_path / "best.pt").write_bytes(weights)
    key = store.root.child("trial-0", "best.pt")
    store.upload(tmp_path / "best.pt", key)
    assert store.sizes() == {f"{scheme}://{bucket}/studies/x/trial-0/best.pt": len(weights)}
    assert store.size(key) == len(weights) and store.size(store.root.child("nothing")) is None
    store.download(key, tmp_path / "copy" / "best.pt")
    assert (tmp_path / "copy" / "best.pt").read_bytes() == weights
    with pytest.raises(KeyRefused, match="outside the study's prefix"):
        store.delete(ObjectLocation(bucket, "studies/y/best.pt", scheme))
    with pytest.raises(KeyRefused, match="outside the study's prefix"):
        store.delete(ObjectLocation(bucket, "studies/x/trial-0/best.pt", "s3" if scheme != "s3" else "gs"))
    assert store.size(key) == len(weights)
    store.delete(key)
    store.delete(key)  # already gone: no error
    assert store.sizes() == {}
    with pytest.raises(KeyRefused, match="cannot be read"):
        store.open_read(key)


def test_a_missing_bucket_or_unreachable_endpoint_is_refused_naming_the_field(s3_env, monkeypatch):
    with pytest.raises(
        StorageRefused, match=r"^storage: bucket 'no-such-bucket' does not exist; set AWS_ENDPOINT_URL_S3"
    ):
        ObjectStore(parse("s3://no-such-bucket/p", "storage")).check("storage")
    from tests.postgres import free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{free_port()}")  # nothing listens
    with pytest.raises(StorageRefused, match=r"^--storage: cannot reach s3://bucket/p: .*AWS_ACCESS_KEY_ID"):
        ObjectStore(parse("s3://bucket/p", "--storage")).check("--storage")


def test_a_missing_gcs_bucket_is_refused_naming_the_field_and_the_credentials(gcs_env):
    with pytest.raises(
        StorageRefused,
        match=r"^storage: bucket 'no-such-bucket' does not exist; set GOOGLE_APPLICATION_CREDENTIALS",
    ):
        ObjectStore(parse("gs://no-such-bucket/p", "storage")).check("storage")


def test_a_study_in_an_object_store_writes_its_run_folders_under_the_local_root(monkeypatch, tmp_path):
    from tuner.storage.confine import study_folder, study_location
    from tuner.storage.study import storage_root, study_storage

    assert study_storage("s3://b-1/studies/x", tmp_path, "x") == (
        tmp_path / "x",
        ObjectLocation("b-1", "studies/x"),
    )
    assert study_storage(str(tmp_path / "own"), tmp_path, "x") == (tmp_path / "own", None)
    monkeypatch.setenv("RNNTUNE_STORAGE", "s3://b-1/studies")
    assert storage_root() == Path("studies")  # the working copies' folder; the URI is no folder
    monkeypatch.setenv("RNNTUNE_STORAGE", "gs://b-1/studies")
    assert storage_root() == Path("studies")
    monkeypatch.setenv("RNNTUNE_STORAGE", "wasb://b-1/studies")
    with pytest.raises(StudyError, match=r"^RNNTUNE_STORAGE: 'wasb://b-1/studies' is a wasb:// URI"):
        storage_root()
    # A stored URI is never taken as a folder (`s3:` under the root); only a server whose object
    # store root holds it may use it.
    assert study_folder("s3://b-1/studies/x", tmp_path, "x") is None
    root = ObjectLocation("b-1", "studies")
    assert study_location("s3://b-1/studies/x", tmp_path, "x", root) == ObjectLocation("b-1", "studies/x")
    assert study_location("s3://b-1/other/x", tmp_path, "x", root) is None
    assert study_location("s3://b-1/studies/x", tmp_path, "x", None) is None


def test_the_filesystem_ray_pickles_holds_no_key(monkeypatch):
    """Ray Tune pickles its `storage_filesystem` into the experiment state in the bucket: the keys
    stay in each process's environment, never in that pickle."""
    import pickle

    from tuner.storage.object_backends import filesystem

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKID-7f2c")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-9e4b")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    fs = filesystem("s3")
    assert fs.region == "us-east-1"
    state = pickle.dumps(fs)
    assert b"secret-9e4b" not in state and b"AKID-7f2c" not in state
    assert b"127.0.0.1:9" in state  # the endpoint travels with it (no secret)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:8")
    assert b"127.0.0.1:8" in pickle.dumps(filesystem("gs"))


def test_the_azure_filesystem_ray_pickles_holds_no_key_and_reads_the_environment_where_unpickled(
    azure_container, azure_endpoint, monkeypatch
):
    """pyarrow's Azure filesystem keeps the account key it was given; the one rnntune hands Ray
    pickles as its class alone and, unpickled, builds itself from that process's environment."""
    import pickle

    from tuner.storage.object_backends import filesystem

    fs = filesystem("abfs")
    state = pickle.dumps(fs)
    assert azure_server.KEY.encode() not in state and azure_server.ACCOUNT.encode() not in state
    with fs.open_output_stream(f"{azure_container}/a.txt") as sink:
        sink.write(b"written before pickling")
    assert (
        pickle.loads(state).open_input_stream(f"{azure_container}/a.txt").read() == b"written before pickling"
    )
    wrong = azure_server.connection_string(azure_endpoint).replace(azure_server.KEY, "d3Jvbmc=")
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", wrong)
    with pytest.raises(OSError):  # the environment where it is unpickled holds the key, not the pickle
        pickle.loads(state).open_input_stream(f"{azure_container}/a.txt").read()


def test_a_missing_azure_container_or_account_is_refused_naming_the_field(azure_env, monkeypatch):
    with pytest.raises(
        StorageRefused,
        match=r"^storage: container 'no-such-box' does not exist; set AZURE_STORAGE_CONNECTION_STRING",
    ):
        ObjectStore(parse("abfs://no-such-box/p", "storage")).check("storage")
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")
    with pytest.raises(
        StorageRefused,
        match=r"^--storage: cannot reach abfs://box/p: no Azure account: neither AZURE_STORAGE_ACCOUNT_NAME",
    ):
        ObjectStore(parse("abfs://box/p", "--storage")).check("--storage")
