"""Every group's cluster settings (registry credentials, ServiceAccount, scheduling, pod metadata)
reach its pod template, validate against Kubernetes 1.36's schemas and KubeRay's CRD, and shapes
Kubernetes would reject are refused first."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tuner.deploy.inputs import EVERYTHING, example_settings, one, render
from tests.tuner.deploy.test_schemas import schema_errors
from tuner.deploy import refusals
from tuner.deploy.inputs import default_values, merged

GROUPS = ("postgres", "head", "workers", "gpuWorkers", "api", "sweep")


def settings_of(group: str) -> dict[str, Any]:
    """Every cluster setting, each value naming its group so a mix-up shows."""
    return {
        "imagePullSecrets": [f"{group.lower()}-pull", {"name": "shared-pull"}],
        "serviceAccountName": f"{group.lower()}-sa",
        "nodeSelector": {"pool.example/name": group.lower()},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": group.lower(), "effect": "NoSchedule"}
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": [group.lower()]}]}
                    ]
                }
            }
        },
        "priorityClassName": f"{group.lower()}-priority",
        "podAnnotations": {"example.org/owner": group},
        "podLabels": {"team": group.lower()},
    }


ALL_GROUPS: dict[str, Any] = {group: settings_of(group) for group in GROUPS}
EVERYWHERE = merged(EVERYTHING, ALL_GROUPS)


def templates(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The pod template of each group of values.yaml."""
    cluster = one(objects, "RayCluster")["spec"]
    workers = {g["groupName"]: g["template"] for g in cluster["workerGroupSpecs"]}
    return {
        "postgres": one(objects, "StatefulSet")["spec"]["template"],
        "head": cluster["headGroupSpec"]["template"],
        "workers": workers["cpu"],
        "gpuWorkers": workers["gpu"],
        "api": one(objects, "Deployment")["spec"]["template"],
        "sweep": one(objects, "Job")["spec"]["template"],
    }


def test_each_group_gets_its_own_settings_and_every_object_validates() -> None:
    objects = render(EVERYWHERE)
    for group, template in templates(objects).items():
        spec, expected = template["spec"], settings_of(group)
        assert spec["imagePullSecrets"] == [{"name": f"{group.lower()}-pull"}, {"name": "shared-pull"}], group
        for key in ("serviceAccountName", "nodeSelector", "tolerations", "affinity", "priorityClassName"):
            assert spec[key] == expected[key], (group, key)
        assert template["metadata"]["annotations"] == {"example.org/owner": group}
        labels = template["metadata"]["labels"]
        assert labels["team"] == group.lower() and labels["app.kubernetes.io/instance"] == "rnntune", group
    for obj in objects:
        assert schema_errors(obj) == [], f"{obj['kind']} {obj['metadata']['name']}"


def test_selectors_still_match_the_pods_with_labels_added() -> None:
    objects = render(EVERYWHERE)
    found = templates(objects)
    for kind, group in (("Deployment", "api"), ("StatefulSet", "postgres")):
        selector = one(objects, kind)["spec"]["selector"]["matchLabels"]
        assert selector.items() <= found[group]["metadata"]["labels"].items(), kind
    service = one(objects, "Service", "rnntune-api")["spec"]["selector"]
    assert service.items() <= found["api"]["metadata"]["labels"].items()


def test_defaults_add_nothing_but_the_gpu_toleration() -> None:
    found = templates(render(EVERYTHING))
    for group, template in found.items():
        spec = template["spec"]
        for key in (
            "imagePullSecrets",
            "serviceAccountName",
            "nodeSelector",
            "affinity",
            "priorityClassName",
        ):
            assert key not in spec, (group, key)
        assert "annotations" not in template["metadata"], group
        expected = default_values()["gpuWorkers"]["tolerations"] if group == "gpuWorkers" else None
        assert spec.get("tolerations") == expected, group


def problems_of(user: dict[str, Any]) -> list[str]:
    defaults = default_values()
    return refusals.problems(user, merged(defaults, user), defaults, example_settings())


@pytest.mark.parametrize(
    ("setting", "value", "start"),
    [
        ("imagePullSecrets", "regcred", "imagePullSecrets must be a list of Secret names"),
        ("imagePullSecrets", [{"nam": "regcred"}], "imagePullSecrets must be a list of Secret names"),
        ("serviceAccountName", ["sa"], "serviceAccountName must be a name"),
        ("priorityClassName", 5, "priorityClassName must be a name"),
        ("nodeSelector", {"gpu": True}, "nodeSelector must map strings to strings"),
        ("podAnnotations", {"replicas": 3}, "podAnnotations must map strings to strings"),
        ("tolerations", {"key": "x"}, "tolerations must be a list of tolerations"),
        ("affinity", ["zone"], "affinity must be a mapping"),
        ("podLabels", {"app.kubernetes.io/component": "x"}, "podLabels sets app.kubernetes.io/component"),
    ],
)
@pytest.mark.parametrize("group", ["head", "sweep"])
def test_shapes_kubernetes_would_reject_are_refused(group: str, setting: str, value: Any, start: str) -> None:
    problems = problems_of({group: {setting: value}})
    assert any(p.startswith(f"values: {group}.{start}") for p in problems), problems
