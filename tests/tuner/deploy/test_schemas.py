"""Every rendered object validates against the real schemas, offline and strictly (an unknown field
fails, as `kubectl apply --validate=strict` would): Kubernetes' own through kubernetes-validate, and
the RayCluster against KubeRay's CRD of the release docs/kubernetes.md names, vendored in kuberay/."""

from __future__ import annotations

import copy
import functools
import hashlib
import re
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.tuner.deploy.inputs import EVERYTHING, EXTERNAL_DB, ROOT, one, render, render_secret

KUBERNETES = "1.36"  # the version docs/kubernetes.md names; KubeRay v1.7.0's CI runs kind v1.36.1
VENDORED = ROOT / "tests" / "tuner" / "deploy" / "kuberay"
CRD = VENDORED / "ray.io_rayclusters.yaml"
VARIANTS = {
    "defaults": ({}, {}),
    "everything": (EVERYTHING, {}),
    "external-db": (
        EXTERNAL_DB,
        {"RNNTUNE_DB_URL": "postgresql+psycopg2://rnntune:pw@db.example:5432/rnntune"},
    ),
    "no-ray-auth": ({}, {"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": ""}),
    "public-reads": (
        {"api": {"publicReads": True}, "sweep": {"enabled": False}},
        {"RNNTUNE_API_READ_TOKEN": ""},
    ),
    "object-store": (
        EVERYTHING,
        {"RNNTUNE_STORAGE": "s3://rnntune-ckpt/studies", "AWS_ENDPOINT_URL_S3": "http://minio.example:9000"},
    ),
    "own-claims": (
        {
            "storage": {"studies": {"existingClaim": "nfs-studies", "storageClassName": "nfs"}},
            "postgres": {"storageClassName": "ssd"},
        },
        {},
    ),
}


def strict(schema: Any) -> Any:
    """`schema` with unknown fields refused wherever it lists the fields (the API server prunes them)."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: strict(value) for key, value in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        result["additionalProperties"] = False
    return result


@functools.cache
def raycluster_validator() -> jsonschema.Draft7Validator:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load(CRD.read_text(), Loader=loader)
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return jsonschema.Draft7Validator(strict(version["schema"]["openAPIV3Schema"]))


def schema_errors(obj: dict[str, Any]) -> list[str]:
    if obj["kind"] == "RayCluster":
        assert obj["apiVersion"] == "ray.io/v1"
        return [
            f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in raycluster_validator().iter_errors(obj)
        ]
    try:
        kubernetes_validate.validate(obj, KUBERNETES, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{'.'.join(map(str, error.absolute_path))}: {error.message}"]
    return []


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_object_validates(variant: str) -> None:
    user_values, changes = VARIANTS[variant]
    objects = [*render(user_values, **changes), render_secret(user_values, **changes)]
    for obj in objects:
        assert schema_errors(obj) == [], f"{obj['kind']} {obj['metadata']['name']}"
    kinds = sorted(o["kind"] for o in objects)
    assert "RayCluster" in kinds and "Secret" in kinds and "Deployment" in kinds


def test_the_validators_catch_an_unknown_field_and_a_wrong_type() -> None:
    objects = render(EVERYTHING)
    cluster = copy.deepcopy(one(objects, "RayCluster"))
    cluster["spec"]["workerGroupSpecs"][1]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = "2"
    cluster["spec"]["headGroupSpec"]["rayStartParam"] = {}
    errors = schema_errors(cluster)
    assert (
        len(errors) == 3
        and any("imagePullPolcy" in e for e in errors)
        and any("'2' is not of type 'integer'" in e for e in errors)
    )
    deployment = copy.deepcopy(one(objects, "Deployment"))
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = {
        "count": 1
    }
    assert schema_errors(deployment)
    job = copy.deepcopy(one(objects, "Job"))
    job["spec"]["template"]["spec"]["restartPolicy"] = "Sometimes"
    job["spec"]["backofLimit"] = 3
    assert schema_errors(job)


def test_the_vendored_crd_is_kuberays_file_as_released() -> None:
    source = (VENDORED / "SOURCE.md").read_text()
    blob = re.search(r"git blob: `([0-9a-f]{40})`", source)
    assert blob, "SOURCE.md records the file's git blob"
    data = CRD.read_bytes()
    assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob.group(1)
    release = re.search(r"release: \*\*(v[\d.]+)\*\*", source)
    assert release and f"/{release.group(1)}/" in source
    docs = (ROOT / "docs" / "kubernetes.md").read_text()
    assert f"KubeRay {release.group(1)}" in docs and f"Kubernetes {KUBERNETES}" in docs
