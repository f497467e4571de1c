"""What the renderer refuses to render, as pure functions of plain dicts.

The settings are the .env with Compose's defaults filled in (`compose.with_defaults`), so an empty
RAY_AUTH_MODE here is an empty one in the containers, not Compose's default.

Each rule returns the problems it finds, each naming the field to change (`values: api.serviceType`
for the values file, `env: RAY_AUTH_TOKEN` for the .env): a secret left empty, a secret written
into the values file, GPUs asked for without the GPU image (or without GPU workers), an API exposed
beyond the cluster without a read token, a URL's user info in a setting the manifests print, a
checkpoint store rnntune cannot write (every pod would refuse it at start), and shapes Kubernetes or
KubeRay would reject later and less clearly. A secret of blanks is an empty
one. Nothing is printed until every rule passes, so a refused values file leaves no half-applied
cluster.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tuner.deploy import placement
from tuner.storage.object_store import StorageRefused, is_uri, parse

# The secrets every cluster needs (or may need: RNNTUNE_DB_URL for an external database). Any other
# setting whose name says it is a secret (`is_secret`: MLFLOW_TRACKING_PASSWORD, ...) is one too: all
# reach pods only through the Secret, never a values file, a manifest or a command line.
SECRETS = (
    "POSTGRES_PASSWORD",
    "RAY_AUTH_TOKEN",
    "RNNTUNE_API_TOKEN",
    "RNNTUNE_API_READ_TOKEN",
    "RNNTUNE_DB_URL",
)
SECRET_NAME = re.compile(
    r"(PASSWORD|TOKEN|SECRET|API_KEY|SECRET_ACCESS_KEY|ACCESS_KEY_ID|ACCOUNT_KEY|CONNECTION_STRING|CREDENTIALS?|DB_URL)$"
)
SECRET_WORDS = ("password", "token", "secret", "api_key", "apikey", "db_url", "dburl", "credential")
NAMES_SECRETS = ("imagepullsecrets",)  # values keys (lower case) whose values name Secrets
SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer")
RAY_AUTH_MODES = ("token", "disabled")
DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
MAX_NAME = 40  # KubeRay appends "-head-svc", "-worker-..." and Kubernetes names stop at 63
# A URL's user info (`scheme://user:password@`): a credential wherever it appears in a value.
USER_INFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s]*@")
# Free-form mappings of values.yaml, whose keys are the user's own (node labels, annotations).
FREE_FORM = placement.FREE_FORM


class Refused(ValueError):
    """The inputs would render a cluster that is unsafe or would not run; `problems` says why."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("refused:\n" + "\n".join(f"  - {p}" for p in problems))


def is_secret(name: str) -> bool:
    """Whether the setting `name` is a secret (a password, token, secret, API key, credential or
    database URL)."""
    return name in SECRETS or SECRET_NAME.search(name.upper()) is not None


def is_set(settings: Mapping[str, str], name: str) -> bool:
    """Whether the .env gives `name` a value: a blank or whitespace one (`" "`) is none."""
    return bool(settings.get(name, "").strip())


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _positive_int_text(value: str) -> bool:
    return value.isdigit() and int(value) > 0


def unknown_keys(user: Mapping[str, Any], defaults: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Keys of the values file that values.yaml does not have (a typo would be silently ignored)."""
    found = []
    for key, value in user.items():
        path = f"{prefix}{key}"
        if key not in defaults:
            where = f"{prefix.rstrip('.')} takes" if prefix else "the settings are"
            found.append(
                f"values: {path} is not a setting; {where}: {', '.join(defaults)} (values.yaml lists them)"
            )
        elif isinstance(value, dict) and isinstance(defaults[key], dict) and path not in FREE_FORM:
            found.extend(unknown_keys(value, defaults[key], f"{path}."))
    return found


def _scalars(data: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, dict):
        return [item for key, value in data.items() for item in _scalars(value, f"{path}{key}.")]
    if isinstance(data, list):
        return [item for i, value in enumerate(data) for item in _scalars(value, f"{path}{i}.")]
    return [(path.rstrip("."), data)]


def secrets_in_values(user: Mapping[str, Any], settings: Mapping[str, str]) -> list[str]:
    """Secrets written into the values file: by their key's name, or by a secret's value."""
    secret_values = {value for name, value in settings.items() if value.strip() and is_secret(name)}
    found = []
    for path, value in _scalars(dict(user)):
        leaf = path.rsplit(".", 1)[-1].lower()
        names_secrets = leaf in NAMES_SECRETS  # holds names of Kubernetes Secrets, not secrets
        if not names_secrets and (any(word in leaf for word in SECRET_WORDS) or is_secret(leaf)):
            found.append(f"values: {path} looks like a secret; secrets go in the .env only (--env)")
        elif isinstance(value, str) and value in secret_values:
            found.append(
                f"values: {path} holds the value of a secret from the .env; secrets go in the .env only"
            )
    return found


def user_info(settings: Mapping[str, str]) -> list[str]:
    """Settings the manifests would print that carry a URL's user info (`http://bob:pw@mlflow:5000`).

    Only secrets reach pods through the Secret; any other setting is written into the manifests
    as it is, where whoever reads the Deployment or the Job reads the password.
    """
    return [
        f"env: {name} holds a URL with user info (user:password@), which the manifests would print; "
        "drop it from the URL and give the credentials as secrets (MLflow: MLFLOW_TRACKING_USERNAME "
        "and MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN)"
        for name, value in settings.items()
        if not is_secret(name) and USER_INFO.search(value)
    ]


def exposed(values: Mapping[str, Any]) -> bool:
    """Whether the API is reachable from outside the cluster (a NodePort, a load balancer, an ingress)."""
    return values["api"]["serviceType"] != "ClusterIP" or bool(values["api"]["ingress"]["enabled"])


def empty_secrets(values: Mapping[str, Any], settings: Mapping[str, str]) -> list[str]:
    """Secrets the cluster needs that the .env leaves empty (docker/make-env fills them all)."""
    needed = ["RNNTUNE_API_TOKEN"]
    needed.append("RNNTUNE_DB_URL" if values["postgres"]["external"] else "POSTGRES_PASSWORD")
    if settings.get("RAY_AUTH_MODE") == "token":
        needed.append("RAY_AUTH_TOKEN")
    if not values["api"]["publicReads"]:
        needed.append("RNNTUNE_API_READ_TOKEN")
    return [
        f"env: {name} is empty or blank; every secret must be set (docker/make-env writes them), and it reaches the "
        "cluster as the Secret of `python -m tuner.deploy secret`"
        for name in needed
        if not is_set(settings, name)
    ]


def exposure(values: Mapping[str, Any], settings: Mapping[str, str]) -> list[str]:
    """An API reachable beyond the cluster must demand a read token."""
    api = values["api"]
    found = []
    if api["serviceType"] not in SERVICE_TYPES:
        found.append(
            f"values: api.serviceType must be one of {', '.join(SERVICE_TYPES)}, not {api['serviceType']!r}"
        )
    if api["ingress"]["enabled"] and not api["ingress"]["host"]:
        found.append(
            "values: api.ingress.host is empty; an ingress needs the host name users reach the API by"
        )
    if not exposed(values):
        return found
    how = "api.ingress.enabled" if api["ingress"]["enabled"] else f"api.serviceType: {api['serviceType']}"
    if not is_set(settings, "RNNTUNE_API_READ_TOKEN"):
        found.append(
            f"env: RNNTUNE_API_READ_TOKEN is empty but values: {how} exposes the API beyond the cluster; "
            "set a read token, not blanks (or keep serviceType ClusterIP without an ingress)"
        )
    if api["publicReads"]:
        found.append(f"values: api.publicReads is true but values: {how} exposes the API beyond the cluster")
    return found


def gpus(values: Mapping[str, Any], settings: Mapping[str, str]) -> list[str]:
    """GPUs only on GPU workers running the GPU image; the head runs no trials."""
    group = values["gpuWorkers"]
    found = []
    if _is_count(group["replicas"]) and group["replicas"] > 0:
        if not values["gpuImage"]:
            found.append(
                "values: gpuWorkers.replicas asks for GPU workers but gpuImage is empty; build the GPU image "
                "(docker compose -f docker-compose.yml -f docker-compose.gpu.yml build), push it and name it there"
            )
        count = settings.get("RAY_WORKER_NUM_GPUS") or str(group["gpus"])
        if not _positive_int_text(count):
            found.append(
                f"values: gpuWorkers.gpus (or env: RAY_WORKER_NUM_GPUS) must be a whole number above 0, not {count!r}"
            )
    per_trial = settings.get("RNNTUNE_GPUS_PER_TRIAL") or "0"
    try:
        asks_gpus = float(per_trial) > 0
    except ValueError:
        found.append(f"env: RNNTUNE_GPUS_PER_TRIAL must be a number, not {per_trial!r}")
        asks_gpus = False
    if asks_gpus and group["replicas"] == 0:
        found.append(
            f"env: RNNTUNE_GPUS_PER_TRIAL={per_trial} asks GPUs for every trial but values: gpuWorkers.replicas "
            "is 0; add GPU workers (with gpuImage) or set it to 0"
        )
    for name in ("RAY_HEAD_NUM_CPUS", "RAY_HEAD_NUM_GPUS"):
        if settings.get(name, "0") != "0":
            found.append(
                f"env: {name} must be 0 on Kubernetes: the head runs no trials (add workers instead)"
            )
    return found


def ray(values: Mapping[str, Any], settings: Mapping[str, str]) -> list[str]:
    """Ray's auth mode, and whole CPUs per worker (Ray counts CPUs in whole numbers)."""
    found = []
    mode = settings.get("RAY_AUTH_MODE", "")
    if mode not in RAY_AUTH_MODES:
        found.append(f"env: RAY_AUTH_MODE must be token or disabled, not {mode!r}")
    cpus = settings.get("RAY_WORKER_NUM_CPUS") or str(values["workers"]["cpus"])
    if not _positive_int_text(cpus):
        found.append(
            f"values: workers.cpus (or env: RAY_WORKER_NUM_CPUS) must be a whole number above 0, not {cpus!r}"
        )
    if not _positive_int_text(str(values["gpuWorkers"]["cpus"])):
        found.append(
            f"values: gpuWorkers.cpus must be a whole number above 0, not {values['gpuWorkers']['cpus']!r}"
        )
    return found


def storage(settings: Mapping[str, str]) -> list[str]:
    """RNNTUNE_STORAGE: a folder, or an object store rnntune supports (object_store.parse)."""
    value = settings.get("RNNTUNE_STORAGE", "").strip()
    if not is_uri(value):
        return []
    try:
        parse(value, "env: RNNTUNE_STORAGE")
    except StorageRefused as err:
        return [str(err)]
    return []


def shape(values: Mapping[str, Any]) -> list[str]:
    """Names and replica counts Kubernetes and KubeRay accept."""
    found = []
    name = values["name"]
    if not isinstance(name, str) or not DNS_1035.fullmatch(name) or len(name) > MAX_NAME:
        found.append(
            f"values: name must be a DNS label (a-z, 0-9, '-', starting with a letter) of at most {MAX_NAME} characters, not {name!r}"
        )
    for group in ("workers", "gpuWorkers"):
        replicas, most = values[group]["replicas"], values[group]["maxReplicas"]
        if not _is_count(replicas) or not _is_count(most):
            found.append(f"values: {group}.replicas and {group}.maxReplicas must be whole numbers >= 0")
        elif replicas > most:
            found.append(f"values: {group}.replicas ({replicas}) is above {group}.maxReplicas ({most})")
    return found


def problems(
    user: Mapping[str, Any],
    values: Mapping[str, Any],
    defaults: Mapping[str, Any],
    settings: Mapping[str, str],
) -> list[str]:
    """Every problem of the inputs: the user's values file, it merged over `defaults`, and the .env."""
    found = unknown_keys(user, defaults) + secrets_in_values(user, settings)
    if found:
        return found
    return (
        shape(values)
        + empty_secrets(values, settings)
        + exposure(values, settings)
        + gpus(values, settings)
        + ray(values, settings)
        + storage(settings)
        + user_info(settings)
        + placement.problems(values)
    )


def check(
    user: Mapping[str, Any],
    values: Mapping[str, Any],
    defaults: Mapping[str, Any],
    settings: Mapping[str, str],
) -> None:
    """Raise `Refused` listing every problem, or return when there is none."""
    found = problems(user, values, defaults, settings)
    if found:
        raise Refused(found)
