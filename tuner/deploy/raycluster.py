"""The KubeRay RayCluster: Compose's `ray-head` and `ray-worker` services as a head and worker groups.

Pods run docker/entrypoint's own `head` and `worker` roles (the `ray.io/overwrite-container-cmd`
annotation keeps KubeRay from replacing them with its generated `ray start`), so a GPU worker starts
CUDA MPS exactly as it does under Compose. The head runs no trials. Each worker offers Ray what
Kubernetes reserves for it: RAY_WORKER_NUM_CPUS (and RAY_WORKER_NUM_GPUS on the GPU group) are set
to the pod's CPU and GPU limits, and the CPU group offers no GPUs whatever the .env says. Token auth
uses the Secret (`authOptions.secretName`), which KubeRay also hands to the init container it adds.
Every Ray container declares its own liveness and readiness probes (Compose's health check,
`python -m tuner.deploy.health`), so KubeRay injects none: its default, an HTTP GET on the dashboard
agent's port, needs Ray's dashboard dependencies, which the image leaves out.
"""

from __future__ import annotations

from tuner.deploy.compose import interpolate
from tuner.deploy.plan import Plan
from tuner.deploy.pods import Json, container, env, pod_spec, resources, template

OVERWRITE_COMMAND = "ray.io/overwrite-container-cmd"


def _head(plan: Plan) -> Json:
    service = plan.services["ray-head"]
    head = plan.values["head"]
    spec = container(
        plan, service, container_env=env(plan, service), resource=resources(head["cpu"], head["memory"])
    )
    port = int(interpolate(service.environment["RAY_HEAD_PORT"], plan.settings))
    spec["ports"] = [{"name": "gcs-server", "containerPort": port}]
    return {
        "serviceType": "ClusterIP",
        "rayStartParams": {},
        "template": template(plan, "head", "ray-head", pod_spec(plan, service, [spec], "head")),
    }


def _worker_group(plan: Plan, *, gpu: bool) -> Json:
    group = plan.values["gpuWorkers" if gpu else "workers"]
    service = (plan.gpu_services if gpu else plan.services)["ray-worker"]
    if gpu:
        cpus, gpus = int(group["cpus"]), int(plan.settings.get("RAY_WORKER_NUM_GPUS") or group["gpus"])
    else:
        cpus, gpus = int(plan.settings.get("RAY_WORKER_NUM_CPUS") or group["cpus"]), 0
    offered = {"RAY_WORKER_NUM_CPUS": str(cpus), "RAY_WORKER_NUM_GPUS": str(gpus)}
    spec = container(
        plan,
        service,
        gpu=gpu,
        container_env=env(plan, service, offered),
        resource=resources(cpus, group["memory"], gpus),
    )
    name = "gpuWorkers" if gpu else "workers"
    component = "ray-gpu-worker" if gpu else "ray-worker"
    return {
        "groupName": "gpu" if gpu else "cpu",
        "replicas": int(group["replicas"]),
        "minReplicas": 0,
        "maxReplicas": int(group["maxReplicas"]),
        "rayStartParams": {},
        "template": template(plan, name, component, pod_spec(plan, service, [spec], name, gpu=gpu)),
    }


def ray_cluster(plan: Plan) -> Json:
    """The RayCluster object."""
    mode = plan.settings["RAY_AUTH_MODE"]  # Compose's default filled in (render.checked_plan)
    auth: Json = {"mode": mode}
    if mode == "token":
        auth["secretName"] = plan.names.secret
    groups = [_worker_group(plan, gpu=False)]
    if plan.gpu:
        groups.append(_worker_group(plan, gpu=True))
    metadata = plan.names.metadata(plan.names.cluster, "ray")
    metadata["annotations"] = {OVERWRITE_COMMAND: "true"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": metadata,
        "spec": {
            "rayVersion": plan.ray_version,
            "enableInTreeAutoscaling": False,
            "authOptions": auth,
            "headGroupSpec": _head(plan),
            "workerGroupSpecs": groups,
        },
    }
