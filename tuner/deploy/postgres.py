"""Compose's `postgres` service as a one-replica StatefulSet and its Service.

Its data volume is the StatefulSet's claim named after Compose's volume (`postgres-data`); Kubernetes
keeps that claim when the StatefulSet is deleted, so the studies survive an uninstall. PGDATA is a
folder inside the volume, since a fresh volume's root may hold `lost+found`, which initdb refuses.
Nothing is rendered for an external server (`values: postgres.external`).
"""

from __future__ import annotations

from tuner.deploy import placement
from tuner.deploy.compose import interpolate
from tuner.deploy.plan import Plan
from tuner.deploy.pods import Json, env, probes, resources, template

PORT = 5432  # the postgres image's; Compose publishes none


def statefulset(plan: Plan) -> Json:
    service = plan.services["postgres"]
    values = plan.values["postgres"]
    volume, mount_path = service.volumes[0].split(":")[:2]
    container: Json = {
        "name": service.name,
        "image": interpolate(service.image, plan.settings),
        "imagePullPolicy": plan.values["imagePullPolicy"],
        "env": [*env(plan, service), {"name": "PGDATA", "value": f"{mount_path}/pgdata"}],
        "ports": [{"name": "postgres", "containerPort": PORT}],
        "resources": resources(values["cpu"], values["memory"]),
        "volumeMounts": [{"name": volume, "mountPath": mount_path}],
        **probes(service),
    }
    claim: Json = {
        "metadata": {"name": volume, "labels": plan.names.labels("postgres")},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": str(values["size"])}},
        },
    }
    if values["storageClassName"]:
        claim["spec"]["storageClassName"] = values["storageClassName"]
    labels = plan.names.labels("postgres")
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": plan.names.metadata(plan.names.postgres, "postgres"),
        "spec": {
            "serviceName": plan.names.postgres,
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": template(
                plan, "postgres", "postgres", {"containers": [container], **placement.spec_fields(values)}
            ),
            "volumeClaimTemplates": [claim],
        },
    }


def service(plan: Plan) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": plan.names.metadata(plan.names.postgres, "postgres"),
        "spec": {
            "selector": plan.names.labels("postgres"),
            "ports": [{"name": "postgres", "port": PORT, "targetPort": "postgres"}],
        },
    }


def objects(plan: Plan) -> list[Json]:
    """PostgreSQL's Service and StatefulSet, or nothing for an external server."""
    if plan.values["postgres"]["external"]:
        return []
    return [service(plan), statefulset(plan)]
