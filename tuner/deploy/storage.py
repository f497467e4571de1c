"""The shared checkpoint volume: Compose's `studies` volume as a ReadWriteMany claim.

Every trial writes its run folder there and the driver, the API and a retrying node read it, so
every Ray pod and the API mount it at the same path (docs/cluster.md). It is its own object, not
part of a workload, so deleting the cluster's workloads keeps it; none is rendered when the values
name an existing claim, or when the checkpoints live in an object store (`RNNTUNE_STORAGE=s3://...`).
"""

from __future__ import annotations

from tuner.deploy.plan import Plan
from tuner.deploy.pods import Json


def studies_claim(plan: Plan) -> list[Json]:
    values = plan.values["storage"]["studies"]
    if values["existingClaim"] or plan.object_store:
        return []
    spec: Json = {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": str(values["size"])}},
    }
    if values["storageClassName"]:
        spec["storageClassName"] = values["storageClassName"]
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": plan.names.metadata(plan.names.studies, "storage"),
            "spec": spec,
        }
    ]
