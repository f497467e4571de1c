"""The cluster settings of a group of pods: registry credentials, identity, scheduling, metadata.

Every group of values.yaml (postgres, head, workers, gpuWorkers, api, sweep) takes the same keys,
written into its pod template under Kubernetes' own names, so a private registry, a node pool or a
priority class can be named for each group. `problems` refuses shapes Kubernetes would reject
later, and labels that would take over the ones the Services and selectors rely on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Json = dict[str, Any]
GROUPS = ("postgres", "head", "workers", "gpuWorkers", "api", "sweep")
# values key -> pod spec field, for those written as they are
SPEC_FIELDS = {
    "serviceAccountName": "serviceAccountName",
    "nodeSelector": "nodeSelector",
    "tolerations": "tolerations",
    "affinity": "affinity",
    "priorityClassName": "priorityClassName",
}
KEYS = ("imagePullSecrets", *SPEC_FIELDS, "podAnnotations", "podLabels")
# Mappings whose keys are the user's own (node labels, annotations), not settings of values.yaml.
FREE_FORM = tuple(
    f"{group}.{key}"
    for group in GROUPS
    for key in ("nodeSelector", "affinity", "podAnnotations", "podLabels")
)
OWN_LABELS = "app.kubernetes.io/"  # the labels names.labels() sets, which selectors match


def pull_secrets(names: list[Any]) -> list[Json]:
    """`imagePullSecrets` from names (or `{name: ...}` entries, as Kubernetes writes them)."""
    return [dict(name) if isinstance(name, dict) else {"name": str(name)} for name in names]


def spec_fields(group: Mapping[str, Any]) -> Json:
    """The pod spec fields of the group's settings, those left empty omitted."""
    fields: Json = {}
    if group["imagePullSecrets"]:
        fields["imagePullSecrets"] = pull_secrets(list(group["imagePullSecrets"]))
    for key, field in SPEC_FIELDS.items():
        if group[key]:
            fields[field] = group[key]
    return fields


def metadata(group: Mapping[str, Any], labels: Mapping[str, str]) -> Json:
    """A pod template's metadata: our labels over the group's podLabels, and its podAnnotations."""
    found: Json = {"labels": {**{str(k): str(v) for k, v in group["podLabels"].items()}, **labels}}
    if group["podAnnotations"]:
        found["annotations"] = {str(k): str(v) for k, v in group["podAnnotations"].items()}
    return found


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _group_problems(name: str, group: Mapping[str, Any]) -> list[str]:
    found = []
    pulls = group["imagePullSecrets"]
    if not isinstance(pulls, list) or not all(
        (isinstance(p, str) and p) or (isinstance(p, dict) and set(p) == {"name"}) for p in pulls
    ):
        found.append(f"values: {name}.imagePullSecrets must be a list of Secret names, not {pulls!r}")
    for key in ("serviceAccountName", "priorityClassName"):
        if not isinstance(group[key], str):
            found.append(f"values: {name}.{key} must be a name (a string), not {group[key]!r}")
    for key in ("nodeSelector", "podAnnotations", "podLabels"):
        if not _string_map(group[key]):
            found.append(f"values: {name}.{key} must map strings to strings (quote numbers and booleans)")
    if not isinstance(group["tolerations"], list) or not all(
        isinstance(t, dict) for t in group["tolerations"]
    ):
        found.append(f"values: {name}.tolerations must be a list of tolerations (mappings)")
    if not isinstance(group["affinity"], dict):
        found.append(f"values: {name}.affinity must be a mapping (Kubernetes' Affinity)")
    if _string_map(group["podLabels"]):
        taken = sorted(k for k in group["podLabels"] if k.startswith(OWN_LABELS))
        if taken:
            found.append(
                f"values: {name}.podLabels sets {', '.join(taken)}; the {OWN_LABELS}* labels are the "
                "renderer's (Services and selectors match them)"
            )
    return found


def problems(values: Mapping[str, Any]) -> list[str]:
    """Cluster settings of any group that Kubernetes would refuse or that would break a selector."""
    return [problem for name in GROUPS for problem in _group_problems(name, values[name])]
