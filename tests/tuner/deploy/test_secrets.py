"""Secrets reach pods only through the Secret: never in the manifests, and only where Compose puts them."""

from __future__ import annotations

import yaml

from tests.tuner.deploy.inputs import (
    EVERYTHING,
    EXTERNAL_DB,
    ROOT,
    SECRET_NAME,
    SECRET_VALUES,
    containers,
    env_of,
    one,
    render,
    render_secret,
)
from tuner.deploy.render import to_yaml

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
    assert {k for k, v in env_of(found["ray-worker"]).items() if isinstance(v, tuple)} == {"RAY_AUTH_TOKEN"}
    assert "POSTGRES_PASSWORD" not in env_of(found["sweep"])


def test_no_command_line_carries_a_secret_or_the_database_url() -> None:
    found = containers(render(EXTERNAL_DB, RNNTUNE_DB_URL=DB_URL))
    for container in found.values():
        words = " ".join(container.get("args", []) + container.get("command", []))
        assert "--db" not in words and "token" not in words.lower() and "postgresql" not in words
    assert env_of(found["api"])["RNNTUNE_DB_URL"] == ("secret", "RNNTUNE_DB_URL")
    assert not {"POSTGRES_HOST", "POSTGRES_PASSWORD"} & set(env_of(found["api"]))
