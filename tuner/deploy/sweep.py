"""Compose's one-shot `sweep` service as a Job: create the study through the API, start it, follow it.

The same command and RNNTUNE_* settings as Compose (`rnntune remote --wait 300 create --exist-ok
--start --follow`), with the API's Service as RNNTUNE_API_URL; with GPU workers it takes
docker-compose.gpu.yml's defaults (a GPU per trial, device=auto). Running it again resumes the
study, so a retried pod is harmless.
"""

from __future__ import annotations

from tuner.deploy.plan import Plan
from tuner.deploy.pods import Json, container, env, pod_spec, resources, template

BACKOFF_LIMIT = 3


def job(plan: Plan) -> list[Json]:
    """The Job, or nothing when `values: sweep.enabled` is false."""
    values = plan.values["sweep"]
    if not values["enabled"]:
        return []
    service = (plan.gpu_services if plan.gpu else plan.services)["sweep"]
    spec = container(
        plan, service, container_env=env(plan, service), resource=resources(values["cpu"], values["memory"])
    )
    return [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": plan.names.metadata(plan.names.sweep, "sweep"),
            "spec": {
                "backoffLimit": BACKOFF_LIMIT,
                "template": template(
                    plan, "sweep", "sweep", pod_spec(plan, service, [spec], "sweep", restartPolicy="Never")
                ),
            },
        }
    ]
