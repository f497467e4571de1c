"""Secrets reach pods only through the Secret: never in the manifests, and only where Compose puts them.

A URL's user info is a secret too (refused where a manifest would print it), and a token of blanks is no token."""

from __future__ import annotations

import pytest
import yaml

from tests.tuner.deploy.inputs import (
    EVERYTHING,
    EXTERNAL_DB,
    ROOT,
    SECRET_NAME,
    SECRET_VALUES,
    containers,
    env_of,
    example_settings,
    one,
    render,
    render_secret,
)
from tuner.deploy.inputs import parse_env
from tuner.deploy.refusals import Refused
from tuner.deploy.render import manifests, secret, to_yaml

DB_URL = "postgresql+psycopg2://rnntune:db-url-password-4e1d@db.example:5432/rnntune"


def test_no_secret_value_is_in_the_manifests() -> None:
    for user_values, changes in [({}, {}), (EVERYTHING, {}), (EXTERNAL_DB, {"RNNTUNE_DB_URL": DB_URL})]:
        text = to_yaml(render(user_values, **changes))
        for value in [*SECRET_VALUES.values(), DB_URL]:
            assert value not in text


def test_the_secret_holds_every_key_the_pods_read_and_nothing_else() -> None:
    for user_values, changes in [({}, {}), (EVERYTHING, {}), (EXTERNAL_DB, {"RNNTUNE_DB_URL": DB_URL})]:
        secret = render_secret(user_values, **changes)
        objects = render(user_values, **changes)
        read = {
            key
            for c in containers(objects).values()
            for _, key in (v for v in env_of(c).values() if isinstance(v, tuple))
        }
        cluster = one(objects, "RayCluster")
        read.add("auth_token")  # KubeRay's init container reads authOptions.secretName's auth_token
        assert cluster["spec"]["authOptions"]["secretName"] == secret["metadata"]["name"]
        assert set(secret["stringData"]) == read
        refs = {
            e["valueFrom"]["secretKeyRef"]["name"]
            for c in containers(objects).values()
            for e in c["env"]
            if "valueFrom" in e
        }
        assert refs == {secret["metadata"]["name"]}


def test_the_secret_carries_the_env_files_values() -> None:
    data = render_secret()["stringData"]
    assert data["auth_token"] == SECRET_VALUES["RAY_AUTH_TOKEN"]
    assert data["POSTGRES_PASSWORD"] == SECRET_VALUES["POSTGRES_PASSWORD"]
    assert "RNNTUNE_DB_URL" not in data
    external = render_secret(EXTERNAL_DB, RNNTUNE_DB_URL=DB_URL)["stringData"]
    assert external["RNNTUNE_DB_URL"] == DB_URL and "POSTGRES_PASSWORD" not in external


def test_each_container_gets_only_the_secrets_compose_gives_it() -> None:
    found = containers(render(EVERYTHING))
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    pairs = {"ray-head": "ray-head", "ray-worker": "ray-worker", "ray-worker-gpu": "ray-worker"}
    pairs.update(api="api", sweep="sweep", postgres="postgres")
    for name, service in pairs.items():
        rendered = {k for k, v in env_of(found[name]).items() if isinstance(v, tuple)}
        expected = {k for k in compose[service]["environment"] if SECRET_NAME.search(k)}
        assert rendered == expected, name
    # A worker reads the Ray token and the object store's keys (its trials upload checkpoints), nothing else.
    worker_secrets = {k for k, v in env_of(found["ray-worker"]).items() if isinstance(v, tuple)}
    assert worker_secrets == {
        "RAY_AUTH_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_CONNECTION_STRING",
    }
    assert "POSTGRES_PASSWORD" not in env_of(found["sweep"])


def test_no_command_line_carries_a_secret_or_the_database_url() -> None:
    found = containers(render(EXTERNAL_DB, RNNTUNE_DB_URL=DB_URL))
    for container in found.values():
        words = " ".join(container.get("args", []) + container.get("command", []))
        assert "--db" not in words and "token" not in words.lower() and "postgresql" not in words
    assert env_of(found["api"])["RNNTUNE_DB_URL"] == ("secret", "RNNTUNE_DB_URL")
    assert not {"POSTGRES_HOST", "POSTGRES_PASSWORD"} & set(env_of(found["api"]))


MLFLOW_WITH_USER = "http://bob:mlflow-url-pw-3c9e@mlflow:5000"


def test_a_url_with_user_info_is_refused_naming_the_field_and_never_printed() -> None:
    with pytest.raises(Refused) as refused:
        render(RNNTUNE_MLFLOW_URI=MLFLOW_WITH_USER)
    assert [p.split(" holds")[0] for p in refused.value.problems] == ["env: RNNTUNE_MLFLOW_URI"]
    assert "mlflow-url-pw-3c9e" not in str(refused.value)
    with pytest.raises(Refused):
        render_secret(RNNTUNE_MLFLOW_URI=MLFLOW_WITH_USER)


def test_a_url_without_user_info_reaches_the_api_and_the_job_with_credentials_by_reference() -> None:
    found = containers(render(RNNTUNE_MLFLOW_URI="http://mlflow:5000", MLFLOW_TRACKING_USERNAME="bob"))
    assert env_of(found["api"])["RNNTUNE_MLFLOW_URIS"] == "http://mlflow:5000"
    assert env_of(found["sweep"])["RNNTUNE_MLFLOW_URI"] == "http://mlflow:5000"
    assert env_of(found["api"])["MLFLOW_TRACKING_PASSWORD"] == ("secret", "MLFLOW_TRACKING_PASSWORD")


@pytest.mark.parametrize(
    "line", ['RNNTUNE_API_READ_TOKEN=" "', "RNNTUNE_API_READ_TOKEN= \t", "RNNTUNE_API_READ_TOKEN='  '"]
)
def test_a_blank_read_token_read_from_an_env_file_is_no_token(line: str) -> None:
    settings = {**example_settings(), **parse_env(line)}
    assert settings["RNNTUNE_API_READ_TOKEN"].strip() == ""
    with pytest.raises(Refused, match=r"env: RNNTUNE_API_READ_TOKEN is empty but values: api\.serviceType"):
        manifests(settings, {"api": {"serviceType": "NodePort"}})
    inside = secret(settings, {"api": {"publicReads": True}})
    assert inside["stringData"]["RNNTUNE_API_READ_TOKEN"] == ""


def test_an_inline_comment_is_no_token() -> None:
    settings = {**example_settings(), **parse_env("RNNTUNE_API_READ_TOKEN=abc # the read token\n")}
    assert secret(settings, {})["stringData"]["RNNTUNE_API_READ_TOKEN"] == "abc"
