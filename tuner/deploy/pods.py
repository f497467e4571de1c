"""A Kubernetes container, its volumes and its probes, made from one Compose service.

The container keeps the image's entrypoint (docker/entrypoint, which picks the role and starts
CUDA MPS on GPU workers) and gets Compose's `command` as its arguments; its environment is the
service's, entry by entry, with secrets read from the Secret and Compose service names replaced by
Kubernetes Service names. Compose's `shm_size` becomes a memory-backed /dev/shm, its health
check the readiness and liveness probes, its `init: true` a pod that reaps zombies
(`shareProcessNamespace`: the pause container is PID 1, as tini is under Compose). Pods that mount
the checkpoint volume first run Compose's one-shot `studies-owner` as an init container, as root,
which hands the volume's root to the image's user where the storage driver left it root-owned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuner.deploy import placement
from tuner.deploy.compose import (
    Service,
    docker_size_to_quantity,
    duration_seconds,
    healthcheck_command,
    interpolate,
)
from tuner.deploy.names import ADDRESS_SETTINGS, translate_address
from tuner.deploy.plan import Plan
from tuner.deploy.refusals import is_secret
from tuner.deploy.secret import secret_env

Json = dict[str, Any]
# The image's user (docker/Dockerfile) is in group 1000 unless a base image took it; fsGroup makes
# the shared volumes writable for it where the storage driver applies it (most skip it on
# ReadWriteMany volumes: the `studies-owner` init container covers those).
FS_GROUP = 1000
SHM_VOLUME = "dshm"
OWNER = "studies-owner"  # Compose's one-shot service that owns the checkpoint volume's root
OWNER_RESOURCES = ("100m", "64Mi")  # a chown and a chmod in bash


def image(plan: Plan, service: Service, *, gpu: bool = False) -> str:
    """The image of `service`: the values file's (gpuImage for GPU workers), else Compose's."""
    if gpu:
        return str(plan.values["gpuImage"])
    return str(plan.values["image"]) or interpolate(service.image, plan.settings)


def env(
    plan: Plan, service: Service, overrides: Mapping[str, str] | None = None, drop: tuple[str, ...] = ()
) -> list[Json]:
    """The service's environment: Compose's names and values, secrets by reference."""
    overrides = overrides or {}
    hosts = plan.names.compose_hosts()
    entries: list[Json] = []
    for name, raw in service.environment.items():
        if name in drop:
            continue
        if is_secret(name):
            entries.append(secret_env(name, plan))
            continue
        value = overrides.get(name, interpolate(raw, plan.settings))
        if name in ADDRESS_SETTINGS:
            value = translate_address(value, hosts)
        entries.append({"name": name, "value": value})
    return entries


def resources(cpu: object, memory: object, gpus: int = 0) -> Json:
    """Requests equal to limits: what Ray is told the node offers is what Kubernetes reserves."""
    amounts: Json = {"cpu": str(cpu), "memory": str(memory)}
    if gpus:
        amounts["nvidia.com/gpu"] = str(gpus)
    return {"requests": dict(amounts), "limits": dict(amounts)}


def probes(service: Service) -> Json:
    """Readiness and liveness probes running the service's Compose health check."""
    check = service.healthcheck
    if not check:
        return {}
    probe = {
        "exec": {"command": healthcheck_command(check)},
        "periodSeconds": duration_seconds(str(check.get("interval", "30s"))),
        "timeoutSeconds": duration_seconds(str(check.get("timeout", "30s"))),
        "failureThreshold": int(check.get("retries", 3)),
        "initialDelaySeconds": duration_seconds(str(check.get("start_period", "0s"))),
    }
    return {"readinessProbe": probe, "livenessProbe": dict(probe)}


def _claim(plan: Plan, source: str) -> tuple[str, bool] | None:
    """The claim behind a Compose volume: `studies`, or the host folder of the datasets (if claimed)."""
    storage = plan.values["storage"]
    if source == "studies":
        return storage["studies"]["existingClaim"] or plan.names.studies, False
    if not source.startswith((".", "/", "~")):
        raise ValueError(f"Compose volume {source!r} has no Kubernetes counterpart")
    claim = storage["datasets"]["existingClaim"]
    return (claim, True) if claim else None


def volumes(plan: Plan, service: Service) -> tuple[list[Json], list[Json]]:
    """(volumeMounts, volumes) of the service: its Compose volumes as claims (the checkpoint volume
    a pod's own empty folder when the checkpoints live in an object store), and /dev/shm."""
    mounts: list[Json] = []
    sources: list[Json] = []
    for spec in service.volumes:
        source, target, *mode = interpolate(spec, plan.settings).split(":")
        if source == "studies" and plan.object_store:  # the pod's own working copies (storage.py)
            mounts.append({"name": "studies", "mountPath": target, "readOnly": False})
            sources.append({"name": "studies", "emptyDir": {}})
            continue
        claim = _claim(plan, source)
        if claim is None:
            continue
        name = "studies" if source == "studies" else "datasets"
        read_only = "ro" in mode or claim[1]
        mounts.append({"name": name, "mountPath": target, "readOnly": read_only})
        sources.append(
            {"name": name, "persistentVolumeClaim": {"claimName": claim[0], "readOnly": read_only}}
        )
    if service.shm_size:
        size = docker_size_to_quantity(interpolate(service.shm_size, plan.settings))
        mounts.append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
        sources.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": size}})
    return mounts, sources


def container(
    plan: Plan,
    service: Service,
    *,
    gpu: bool = False,
    container_env: list[Json],
    resource: Json,
    args: list[str] | None = None,
) -> Json:
    """The container of `service` (named after it) with the given environment and resources."""
    mounts, _ = volumes(plan, service)
    spec: Json = {
        "name": service.name,
        "image": image(plan, service, gpu=gpu),
        "imagePullPolicy": plan.values["imagePullPolicy"],
        "args": list(service.command if args is None else args),
        "env": container_env,
        "resources": resource,
        "volumeMounts": mounts,
    }
    spec.update(probes(service))
    return spec


def run_as(user: str) -> Json:
    """A container's securityContext for Compose's `user: UID[:GID]` (numeric, as Kubernetes needs)."""
    uid, _, gid = user.partition(":")
    context: Json = {"runAsUser": int(uid)}
    if gid:
        context["runAsGroup"] = int(gid)
    if int(uid) == 0:
        context["runAsNonRoot"] = False
    return context


def owner_init(plan: Plan, service: Service, *, gpu: bool = False) -> list[Json]:
    """Compose's `studies-owner` as an init container, if `service` mounts the checkpoint volume."""
    if not any(m["name"] == "studies" for m in volumes(plan, service)[0]):
        return []
    owner = plan.services[OWNER]
    owned = [m for m in volumes(plan, owner)[0] if m["name"] == "studies"]
    init: Json = {
        "name": owner.name,
        "image": image(plan, owner, gpu=gpu),  # the pod's image: the GPU image's user may differ
        "imagePullPolicy": plan.values["imagePullPolicy"],
        "args": list(owner.command),
        "resources": resources(*OWNER_RESOURCES),
        "volumeMounts": owned,
    }
    if owner.user is not None:
        init["securityContext"] = run_as(owner.user)
    return [init]


def pod_spec(
    plan: Plan, service: Service, containers: list[Json], group: str, *, gpu: bool = False, **extra: Any
) -> Json:
    """A pod of rnntune's image: its containers, the service's volumes, a group for the volumes,
    the checkpoint volume's owner first, and the cluster settings of `values: GROUP`."""
    _, sources = volumes(plan, service)
    spec: Json = {"containers": containers, "volumes": sources}
    init = owner_init(plan, service, gpu=gpu)
    if init:
        spec["initContainers"] = init
    spec["securityContext"] = {"fsGroup": FS_GROUP, "fsGroupChangePolicy": "OnRootMismatch"}
    if service.init:
        spec["shareProcessNamespace"] = True
    spec.update(placement.spec_fields(plan.values[group]))
    spec.update(extra)
    return spec


def template(plan: Plan, group: str, component: str, spec: Json) -> Json:
    """A pod template: our labels (and the group's podLabels, podAnnotations) and `spec`."""
    return {"metadata": placement.metadata(plan.values[group], plan.names.labels(component)), "spec": spec}
