"""Compose's `api` service as a Deployment, its Service and, if asked for, an Ingress.

One replica, replaced by stopping the old pod first (`Recreate`): the API drives the sweeps it
starts, and a study has one driver at a time (docs/reliability.md). Its host allow-list gets the
Service's names and the ingress host on top of Compose's. With an external PostgreSQL it reads
RNNTUNE_DB_URL from the Secret instead of the server's parts.
"""

from __future__ import annotations

from tuner.deploy.compose import container_port
from tuner.deploy.plan import Plan
from tuner.deploy.pods import Json, container, env, pod_spec, resources, template
from tuner.deploy.secret import secret_env

POSTGRES_PARTS = ("POSTGRES_HOST", "POSTGRES_USER", "POSTGRES_DB", "POSTGRES_PASSWORD")


def port(plan: Plan) -> int:
    """The API's port inside its container (the target of Compose's published port)."""
    return container_port(plan.services["api"].ports[0])


def _allowed_hosts(plan: Plan, compose_value: str) -> str:
    api = plan.values["api"]
    hosts = [h.strip() for h in compose_value.split(",") if h.strip()]
    hosts += plan.names.api_hosts() + [str(h) for h in api["allowedHosts"]]
    if api["ingress"]["enabled"]:
        hosts.append(str(api["ingress"]["host"]))
    return ",".join(dict.fromkeys(hosts))


def _env(plan: Plan) -> list[Json]:
    external = bool(plan.values["postgres"]["external"])
    entries = env(plan, plan.services["api"], drop=POSTGRES_PARTS if external else ())
    for entry in entries:
        if entry["name"] == "RNNTUNE_ALLOWED_HOSTS":
            entry["value"] = _allowed_hosts(plan, entry["value"])
    if external:
        entries.append(secret_env("RNNTUNE_DB_URL", plan))
    return entries


def deployment(plan: Plan) -> Json:
    service = plan.services["api"]
    api = plan.values["api"]
    args = list(service.command) + (["--public-reads"] if api["publicReads"] else [])
    spec = container(
        plan, service, container_env=_env(plan), resource=resources(api["cpu"], api["memory"]), args=args
    )
    spec["ports"] = [{"name": "http", "containerPort": port(plan)}]
    labels = plan.names.labels("api")
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": plan.names.metadata(plan.names.api, "api"),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": template(plan, "api", "api", pod_spec(plan, service, [spec], "api")),
        },
    }


def service(plan: Plan) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": plan.names.metadata(plan.names.api, "api"),
        "spec": {
            "type": plan.values["api"]["serviceType"],
            "selector": plan.names.labels("api"),
            "ports": [{"name": "http", "port": port(plan), "targetPort": "http"}],
        },
    }


def ingress(plan: Plan) -> Json:
    ingress_values = plan.values["api"]["ingress"]
    backend = {"service": {"name": plan.names.api, "port": {"name": "http"}}}
    spec: Json = {
        "rules": [
            {
                "host": ingress_values["host"],
                "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
            }
        ]
    }
    if ingress_values["className"]:
        spec["ingressClassName"] = ingress_values["className"]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": plan.names.metadata(plan.names.api, "api"),
        "spec": spec,
    }


def objects(plan: Plan) -> list[Json]:
    """The API's Service, Deployment and (if enabled) Ingress."""
    found = [service(plan), deployment(plan)]
    if plan.values["api"]["ingress"]["enabled"]:
        found.append(ingress(plan))
    return found
