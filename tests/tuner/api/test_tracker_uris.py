"""Issue 44 item 1 over real HTTP: a REST client may name as `mlflow_uri` only an MLflow server the
operator lists in RNNTUNE_MLFLOW_URIS or a local store inside the storage root; never the study
database, never a token in the URI; a stored spec that breaks the rule is not started. Issue
"Hardening, fifth round" item 2: percent-encoded `..` (which SQLAlchemy and MLflow decode) and a NUL
or control character are refused too, at creation (422) and at start (409)."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import TINY_SETTINGS
from tests.tuner.api.fixtures import live_server
from tuner.api import ApiSettings
from tuner.sweeps.study.create import create_study

pytest.importorskip("mlflow")
ALLOWED = "http://mlflow.internal:5000"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("tracker-uris")
    storage = root / "storage"
    storage.mkdir()
    db_url = f"sqlite:///{root / 's.db'}"
    # A study created on the command line (an operator's choice) that names a store outside the root.
    create_study(
        "planted-encoded",
        storage_url=db_url,
        space="tiny",
        overrides={"set": TINY_SETTINGS},
        mlflow_uri=f"sqlite:///{storage}/%2e%2e/%2e%2e/outside/x.db",
        storage_path=storage / "planted-encoded",
    )
    create_study(
        "planted",
        storage_url=db_url,
        space="tiny",
        overrides={"set": TINY_SETTINGS},
        mlflow_uri=f"sqlite:///{root / 'outside.db'}",
        storage_path=storage / "planted",
    )
    settings = ApiSettings(db_url=db_url, storage_root=storage, mlflow_uris=(ALLOWED,))
    with live_server(settings) as url:
        yield {"url": url, "root": root, "storage": storage, "db": root / "s.db"}


def _create(env, name: str, uri: str) -> httpx.Response:
    body = {"name": name, "space": "tiny", "n_trials": 2, "mlflow_uri": uri, "mlflow_checkpoints": True}
    return httpx.post(f"{env['url']}/studies", json=body, timeout=60)


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("sqlite:////some/outside/ml.db", "inside the server's storage root"),
        ("file:///tmp/mlruns", "inside the server's storage root"),
        ("http://127.0.0.1:9/", "RNNTUNE_MLFLOW_URIS"),  # blind SSRF: any address the server reaches
        ("https://169.254.169.254/latest", "RNNTUNE_MLFLOW_URIS"),
        ("sqlite:////{root}/storage/%2e%2e/s.db", "study database"),  # reported: 201, then MLflow's tables
        ("sqlite:////{root}/storage/%2E%2E/elsewhere.db", "inside the server's storage root"),
        ("file:///{root}/storage/%2e%2e/mlruns", "inside the server's storage root"),
        ("sqlite:///a\x00b", "control characters"),  # each a 500 before
        ("file:///x\x00", "control characters"),
        ("sqlite:///{root}/storage/a%00b.db", "control characters"),
    ],
)
def test_a_uri_out_of_bounds_is_refused_naming_the_field(env, uri, says):
    answer = _create(env, "refused", uri.format(root=str(env["root"]).lstrip("/")))
    assert answer.status_code == 422, answer.text
    assert "mlflow_uri" in answer.text and says in answer.text
    assert httpx.get(f"{env['url']}/studies/refused", timeout=30).status_code == 404


def test_the_study_database_is_refused(env):
    answer = _create(env, "ontop", f"sqlite:///{env['db']}")
    assert answer.status_code == 422 and "study database" in answer.text


def test_a_token_in_the_uri_is_refused_and_not_repeated(env):
    answer = _create(env, "tokened", f"{ALLOWED}/?token=s3cret-value")
    assert answer.status_code == 422 and "mlflow_uri" in answer.text
    assert "s3cret-value" not in answer.text


@pytest.mark.parametrize(
    ("name", "uri"), [("listed", f"{ALLOWED}/"), ("local", "sqlite:///{storage}/mlflow.db")]
)
def test_a_listed_server_or_a_store_inside_the_root_is_accepted(env, name, uri):
    uri = uri.format(storage=env["storage"])
    answer = _create(env, name, uri)
    assert answer.status_code == 201, answer.text
    stored = httpx.get(f"{env['url']}/studies/{name}", timeout=30).json()["user_attrs"]["spec"]
    assert stored["mlflow_uri"] == uri and stored["mlflow_checkpoints"] is True


def test_a_stored_spec_out_of_bounds_is_not_started(env):
    answer = httpx.post(f"{env['url']}/studies/planted/start", timeout=60)
    assert answer.status_code == 409 and "mlflow_uri" in answer.text, answer.text
    assert not (env["root"] / "outside.db").exists()


def test_a_stored_spec_with_an_encoded_escape_is_not_started(env):
    """Reported: a planted spec naming `%2e%2e/%2e%2e/outside/x.db` created the file on `/start`."""
    answer = httpx.post(f"{env['url']}/studies/planted-encoded/start", timeout=60)
    assert answer.status_code == 409 and "mlflow_uri" in answer.text, answer.text
    assert not (env["root"].parent / "outside").exists()
