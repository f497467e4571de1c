"""KubeRay keeps every rendered Ray pod up: its probe-injection rule (KubeRay v1.7.0's pod.go,
transcribed in kuberay_probes.py) applied to each Ray container leaves the probes we declare, which
run the image's own health check, and no HTTP GET of the dashboard agent the image does not serve.

The transcription is checked against the vendored Go source (constants and the branches it reads);
the Compose run (tests/test_compose.py) sends the resulting probes to a running head and worker.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest

from tests.tuner.deploy import kuberay_probes as rule
from tests.tuner.deploy.inputs import EVERYTHING, ROOT, one, render
from tests.tuner.deploy.test_schemas import VARIANTS

VENDORED = ROOT / "tests" / "tuner" / "deploy" / "kuberay"
HEALTH = ["python", "-m", "tuner.deploy.health"]
RAY_GCS_RECONNECT_S = 60  # Ray's gcs_rpc_server_reconnect_timeout_s: a raylet gives up on the GCS after it


def go_constants() -> dict[str, str]:
    """`Name = value` lines of the vendored constant.go."""
    text = (VENDORED / "constant.go").read_text()
    value = r'"(?:[^"\\]|\\.)*"|[^\s/]+'  # a Go string literal, or a number or name
    return {m.group(1): m.group(2) for m in re.finditer(rf"^\s*(\w+)\s*=\s*({value})", text, re.M)}


def test_the_vendored_go_files_are_kuberays_as_released() -> None:
    source = (VENDORED / "SOURCE.md").read_text()
    for name in ("pod.go", "constant.go"):
        blob = re.search(rf"`{re.escape(name)}`.*?git blob: `([0-9a-f]{{40}})`", source, re.S)
        assert blob, f"SOURCE.md records {name}'s git blob"
        data = (VENDORED / name).read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob.group(1), name
        assert blob.group(1) in (rule.__doc__ or ""), f"kuberay_probes.py cites {name}'s blob"


def test_the_transcription_has_kuberays_constants() -> None:
    go = go_constants()
    assert int(go["RayContainerIndex"]) == rule.RAY_CONTAINER_INDEX
    assert int(go["DefaultDashboardPort"]) == rule.DEFAULT_DASHBOARD_PORT
    assert int(go["DefaultDashboardAgentListenPort"]) == rule.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT
    assert go["RayAgentRayletHealthPath"] == f'"{rule.RAY_AGENT_RAYLET_HEALTH_PATH}"'
    assert go["RayDashboardGCSHealthPath"] == f'"{rule.RAY_DASHBOARD_GCS_HEALTH_PATH}"'
    assert go["RayNodeHealthPath"] == f'"{rule.RAY_NODE_HEALTH_PATH}"'
    assert go["BaseWgetHealthCommand"] == f'"{rule.BASE_WGET_HEALTH_COMMAND}"'
    for kind, timings in (("Readiness", rule.READINESS), ("Liveness", rule.LIVENESS)):
        names = (
            f"Default{kind}ProbeInitialDelaySeconds",
            f"Default{kind}ProbeTimeoutSeconds",
            f"DefaultHead{kind}ProbeTimeoutSeconds",
            f"Default{kind}ProbePeriodSeconds",
            f"Default{kind}ProbeSuccessThreshold",
            f"Default{kind}ProbeFailureThreshold",
        )
        assert tuple(int(go[n]) for n in names) == timings, kind


def test_the_transcription_follows_pod_go() -> None:
    """The branches kuberay_probes.py transcribes are the ones pod.go has."""
    go = (VENDORED / "pod.go").read_text()
    body = go[go.index("func initLivenessAndReadinessProbe(") :]
    body = body[: body.index("\n}\n")]
    assert "initLivenessAndReadinessProbe(&pod.Spec.Containers[utils.RayContainerIndex]" in go
    assert (
        "if rayContainer.LivenessProbe == nil {" in body and "if rayContainer.ReadinessProbe == nil {" in body
    )
    assert 'minVersion := version.MustParseGeneric("2.53.0")' in go
    assert 'getPort("dashboard-agent-listen-port", utils.DefaultDashboardAgentListenPort)' in body
    assert "commands = append(commands, rayAgentRayletHealthCommand, rayDashboardGCSHealthCommand)" in body
    assert "if creatorCRDType == utils.RayServiceCRD && rayNodeType == rayv1.WorkerNode {" in body


def test_a_ray_container_without_probes_gets_kuberays_http_probe() -> None:
    """What the issue saw: an undeclared Ray 2.60 worker is probed over HTTP on the agent's port,
    120 failures 5 s apart after 30 s (10.5 minutes), which this image's agent never answers."""
    worker = rule.with_probes({"name": "ray-worker"}, head=False, ray_version="2.60.0", params={})
    live = worker["livenessProbe"]
    assert live["httpGet"] == {"path": "/api/healthz", "port": 52365}
    assert (live["initialDelaySeconds"], live["periodSeconds"], live["failureThreshold"]) == (30, 5, 120)
    old = rule.with_probes(
        {"name": "ray-head"}, head=True, ray_version="2.52.1", params={"dashboard-port": "9000"}
    )
    assert old["readinessProbe"]["exec"]["command"][-1].endswith(
        "http://localhost:9000/api/gcs_healthz | grep success"
    )
    assert old["readinessProbe"]["timeoutSeconds"] == 5
    kept = rule.with_probes({"livenessProbe": {"exec": {"command": ["true"]}}}, False, "2.60.0", {})
    assert kept["livenessProbe"] == {"exec": {"command": ["true"]}} and "httpGet" in kept["readinessProbe"]


def declared(container: dict[str, Any]) -> dict[str, Any]:
    return {k: container.get(k) for k in ("livenessProbe", "readinessProbe")}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_kuberay_leaves_every_ray_container_its_own_health_check(variant: str) -> None:
    user_values, changes = VARIANTS[variant]
    cluster = one(render(user_values, **changes), "RayCluster")
    rendered = {"head": cluster["spec"]["headGroupSpec"]}
    rendered.update({g["groupName"]: g for g in cluster["spec"]["workerGroupSpecs"]})
    effective = rule.ray_containers(cluster)
    assert set(effective) == set(rendered) and "cpu" in effective
    for name, container in effective.items():
        ours = rendered[name]["template"]["spec"]["containers"][rule.RAY_CONTAINER_INDEX]
        assert declared(container) == declared(ours), f"{name}: KubeRay would inject a probe"
        for kind in ("livenessProbe", "readinessProbe"):
            probe = container[kind]
            assert "httpGet" not in probe and probe["exec"]["command"] == HEALTH, (name, kind)
            assert probe["timeoutSeconds"] >= 5, "python imports Ray first"
        live = container["livenessProbe"]
        assert live["periodSeconds"] * live["failureThreshold"] > 2 * RAY_GCS_RECONNECT_S, (
            "a GCS restart must not get workers killed before their raylets give up on their own"
        )


def test_the_gpu_group_is_probed_too() -> None:
    effective = rule.ray_containers(one(render(EVERYTHING), "RayCluster"))
    assert set(effective) == {"head", "cpu", "gpu"}
    assert effective["gpu"]["livenessProbe"]["exec"]["command"] == HEALTH
