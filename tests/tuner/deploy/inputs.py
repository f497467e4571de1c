"""Inputs the deploy tests share: the .env Compose ships (.env.example) with every secret filled in
with a fixed, recognisable value, and the rendered objects of a values file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tuner.deploy.inputs import parse_env
from tuner.deploy.render import manifests, secret

ROOT = Path(__file__).resolve().parents[3]
SECRET_VALUES = {
    "POSTGRES_PASSWORD": "pg-password-7f3a9c",
    "RAY_AUTH_TOKEN": "ray-token-1b8e4d",
    "RNNTUNE_API_TOKEN": "api-write-token-5c2f0a",
    "RNNTUNE_API_READ_TOKEN": "api-read-token-9d6b3e",
    "MLFLOW_TRACKING_PASSWORD": "mlflow-password-2a7c5f",
    "MLFLOW_TRACKING_TOKEN": "mlflow-token-8e0b1c",
    "AWS_ACCESS_KEY_ID": "aws-key-id-6c0a2f",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-key-4e1d7b",
    "AZURE_STORAGE_ACCOUNT_KEY": "azure-account-key-5b1e9a",
    "AZURE_STORAGE_CONNECTION_STRING": "AccountName=a;AccountKey=azure-conn-key-0d4c7f",
    "WANDB_API_KEY": "wandb-api-key-3f9e2d",
}
# A setting is a secret when its name says so; Compose may add more (the MLflow credentials, the
# object store's keys, Azure's account key and connection string, and the W&B API key did).
SECRET_NAME = re.compile(
    r"(PASSWORD|TOKEN|SECRET|API_KEY|SECRET_ACCESS_KEY|ACCESS_KEY_ID|ACCOUNT_KEY|CONNECTION_STRING|DB_URL)$"
)
# Values that switch on every optional part: GPU workers, an ingress, a namespace, datasets.
EVERYTHING = {
    "namespace": "ml",
    "gpuImage": "registry.example/rnntune:gpu",
    "gpuWorkers": {"replicas": 2},
    "api": {
        "serviceType": "LoadBalancer",
        "ingress": {"enabled": True, "host": "rnntune.example.org", "className": "nginx"},
    },
    "storage": {"datasets": {"existingClaim": "datasets"}},
}
EXTERNAL_DB = {"postgres": {"external": True}}


def example_settings(**changes: str) -> dict[str, str]:
    """.env.example with its secrets filled in (as docker/make-env does) and `changes` applied."""
    settings = parse_env((ROOT / ".env.example").read_text())
    settings.update(SECRET_VALUES)
    settings.update(changes)
    return settings


def render(user_values: dict[str, Any] | None = None, **changes: str) -> list[dict[str, Any]]:
    return manifests(example_settings(**changes), user_values or {})


def render_secret(user_values: dict[str, Any] | None = None, **changes: str) -> dict[str, Any]:
    return secret(example_settings(**changes), user_values or {})


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, [o["metadata"]["name"] for o in objects if o["kind"] == kind])
    return found[0]


def containers(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every container of the rendered pods by name (ray-head, ray-worker, gpu's as ray-worker-gpu, api, ...)."""
    found: dict[str, dict[str, Any]] = {}
    for obj in objects:
        if obj["kind"] == "RayCluster":
            spec = obj["spec"]
            templates = [("", spec["headGroupSpec"]["template"])]
            templates += [
                ("" if g["groupName"] == "cpu" else "-" + g["groupName"], g["template"])
                for g in spec["workerGroupSpecs"]
            ]
        elif obj["kind"] in ("Deployment", "StatefulSet", "Job"):
            templates = [("", obj["spec"]["template"])]
        else:
            continue
        for suffix, template in templates:
            for container in template["spec"]["containers"]:
                found[container["name"] + suffix] = container
    return found


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    """name -> value, or ("secret", key) for an entry read from a Secret."""
    return {
        e["name"]: ("secret", e["valueFrom"]["secretKeyRef"]["key"]) if "valueFrom" in e else e["value"]
        for e in container.get("env", [])
    }
