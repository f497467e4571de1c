"""The one Secret every pod reads its passwords and tokens from, and how env entries refer to it.

Its values come from the .env (as Compose's do) and appear only in the Secret that
`python -m tuner.deploy secret` prints for `kubectl apply -f -`: never in the rendered manifests,
a values file or a command line. The Ray token is stored under `auth_token`, the key KubeRay
reads from `authOptions.secretName` (for the init container it adds to the worker pods).
"""

from __future__ import annotations

from typing import Any

from tuner.deploy.plan import Plan
from tuner.deploy.refusals import SECRETS, is_secret

RAY_TOKEN_KEY = "auth_token"


def secret_key(name: str) -> str:
    """The key of the Secret that holds the setting `name`."""
    return RAY_TOKEN_KEY if name == "RAY_AUTH_TOKEN" else name


def secret_env(name: str, plan: Plan) -> dict[str, Any]:
    """An env entry that reads the secret setting `name` from the Secret."""
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": plan.names.secret, "key": secret_key(name)}}}


def secret_settings(plan: Plan) -> list[str]:
    """The secret settings this cluster's pods read: Compose's secret entries, and the database's."""
    names = [name for name in SECRETS if name != "RNNTUNE_DB_URL"]
    for service in plan.gpu_services.values():
        names += [name for name in service.environment if is_secret(name)]
    if plan.values["postgres"]["external"]:
        names = [name for name in names if name != "POSTGRES_PASSWORD"] + ["RNNTUNE_DB_URL"]
    return list(dict.fromkeys(names))


def secret_value(plan: Plan, name: str) -> str:
    """The .env's value of `name`; "" for a blank one (`" "` is no token, as `refusals` counts it)."""
    value = plan.settings.get(name, "")
    return value if value.strip() else ""


def secret_object(plan: Plan) -> dict[str, Any]:
    """The Secret, with the .env's values (empty where the .env leaves an optional one empty or blank)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": plan.names.metadata(plan.names.secret, "secrets"),
        "type": "Opaque",
        "stringData": {secret_key(name): secret_value(plan, name) for name in secret_settings(plan)},
    }
