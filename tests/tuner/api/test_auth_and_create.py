"""Auth (bearer tokens, 401s) and POST /studies validation, over real HTTP with the real
`tuner.storage.study.create_study` writing to SQLite (no sweep is started here)."""

from __future__ import annotations

import httpx
import pytest

from tests.tuner.api.fixtures import live_server, make_study
from tuner.api import ApiSettings

WRITE, READ = "write-token-123", "read-token-456"
NEW = {"name": "made-by-api", "space": "tiny", "n_trials": 3, "parallel": 1, "sampler": "random"}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    root = tmp_path_factory.mktemp("auth")
    db_url = f"sqlite:///{root / 's.db'}"
    make_study(db_url, "fixed", root / "storage" / "fixed")
    settings = ApiSettings(db_url=db_url, storage_root=root / "storage", api_token=WRITE)
    with live_server(settings) as url:
        yield url, root


@pytest.fixture(scope="module")
def read_guarded(tmp_path_factory):
    root = tmp_path_factory.mktemp("readauth")
    db_url = f"sqlite:///{root / 's.db'}"
    make_study(db_url, "fixed", root / "storage" / "fixed")
    settings = ApiSettings(db_url=db_url, storage_root=root / "storage", api_token=WRITE, read_token=READ)
    with live_server(settings) as url:
        yield url


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        bearer("wrong"),
        bearer(WRITE + "x"),
        {"Authorization": f"Basic {WRITE}"},
        {"Authorization": "Bearer"},
    ],
)
@pytest.mark.parametrize(
    "method, path",
    [("POST", "/studies"), ("POST", "/studies/fixed/start"), ("POST", "/studies/fixed/stop")],
)
def test_mutations_without_a_valid_token_are_401(guarded, headers, method, path):
    url, _ = guarded
    response = httpx.request(method, url + path, headers=headers, json=NEW)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


def test_with_the_token_mutations_work_and_reads_stay_open(guarded):
    url, root = guarded
    assert httpx.get(f"{url}/studies").status_code == 200
    created = httpx.post(f"{url}/studies", headers=bearer(WRITE), json=NEW)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["status"] == "created" and body["n_trials"] == 3 and body["sampler"] == "random"
    assert body["storage_path"] == str((root / "storage" / "made-by-api").resolve())
    assert body["user_attrs"]["space_def"]["name"] == "tiny"
    again = httpx.post(f"{url}/studies", headers=bearer(WRITE), json=NEW)
    assert again.status_code == 409 and "already exists" in again.json()["detail"]
    stop = httpx.post(f"{url}/studies/fixed/stop", headers=bearer(WRITE))
    assert stop.status_code == 409 and "nothing to stop" in stop.json()["detail"]
    finished = httpx.post(f"{url}/studies/fixed/start", headers=bearer(WRITE))
    assert finished.status_code == 409 and "finished" in finished.json()["detail"]
    assert httpx.post(f"{url}/studies/nope/start", headers=bearer(WRITE)).status_code == 404


def test_read_token_guards_reads_and_cannot_write(read_guarded):
    url = read_guarded
    for path in ("/studies", "/studies/fixed", "/studies/fixed/sensitivity", "/studies/fixed/trials/0"):
        assert httpx.get(url + path).status_code == 401
        assert httpx.get(url + path, headers=bearer("nope")).status_code == 401
        assert httpx.get(url + path, headers=bearer(READ)).status_code == 200
        assert httpx.get(url + path, headers=bearer(WRITE)).status_code == 200
    assert httpx.post(f"{url}/studies", headers=bearer(READ), json=NEW).status_code == 401
    assert httpx.get(f"{url}/web/").status_code == 200  # the page itself holds no data


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"sampler": "bayes"}, "body.sampler: Input should be 'gp'"),
        (
            {"scheduler": "bohb"},
            "body.scheduler: Input should be 'adaptive', 'asha', 'median', 'none', 'hyperband', 'pbt' or 'pb2'",
        ),
        ({"space": "nosuch"}, "body.space: unknown search space 'nosuch'; known:"),
        ({"space": "../../etc/passwd"}, "body.space"),
        ({"n_trials": 0}, "body.n_trials: Input should be greater than or equal to 1"),
        ({"budget": 0}, "body.budget: Input should be greater than 0"),
        ({"name": "bad name!"}, "body.name: String should match pattern"),
        ({"colour": "red"}, "body.colour: Extra inputs are not permitted"),
        ({"overrides": {"ranges": {"learning_rate": "0.01:0.001"}}}, "learning_rate"),
        ({"overrides": {"set": {"max_steps": -5}}}, "max_steps"),
        ({"overrides": {"bogus": {}}}, "body.overrides.bogus"),
        ({"space": {"params": {"learning_rate": {"low": 1, "high": 2, "scale": "weird"}}}}, "scale"),
    ],
)
def test_create_validation_names_field_and_allowed_values(guarded, change, needle):
    url, _ = guarded
    response = httpx.post(f"{url}/studies", headers=bearer(WRITE), json={**NEW, "name": "v", **change})
    assert response.status_code == 422, response.text
    assert needle in response.json()["detail"]
    assert httpx.get(f"{url}/studies/v").status_code == 404


def test_inline_space_and_overrides_are_stored(guarded):
    url, _ = guarded
    space = {
        "fixed": {"cell": "lstm", "dataset": "builtin", "hidden_size": 16, "max_steps": 20},
        "params": {"learning_rate": {"low": 0.001, "high": 0.004, "scale": "log"}},
    }
    body = {**NEW, "name": "inline-one", "space": space, "overrides": {"set": {"max_steps": 30}}}
    response = httpx.post(f"{url}/studies", headers=bearer(WRITE), json=body)
    assert response.status_code == 201, response.text
    attrs = response.json()["user_attrs"]
    assert list(attrs["space_def"]["params"]) == ["learning_rate"]
    assert attrs["task"]["max_steps"] == 30 and attrs["space"] == "inline"
