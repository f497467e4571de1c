"""KubeRay v1.7.0's probe injection, transcribed: the probes a Ray container of a RayCluster ends up with.

Transcribed from the files vendored in kuberay/ (SOURCE.md gives their release and git blobs):

* `ray-operator/controllers/ray/common/pod.go` (blob 679775f3f2c190b25ecd83d74ee3295ee76f61da):
  `BuildPod` calls `initLivenessAndReadinessProbe` on `pod.Spec.Containers[utils.RayContainerIndex]`
  unless the operator runs with ENABLE_PROBES_INJECTION=false (`getEnableProbesInjection`). That
  function gives the container a liveness probe only when it has none, and a readiness probe only
  when it has none. For Ray >= 2.53.0 (`supportsUnifiedHealthCheck`) the probe is an HTTP GET of
  `/api/healthz` on the dashboard agent's port (rayStartParams `dashboard-agent-listen-port`, else
  52365); before, `bash -c` of wget commands: the raylet's health on the agent's port, and on the
  head also the GCS's on the dashboard's port (`dashboard-port`, else 8265). The head's timeouts are
  longer. The RayService branch (worker readiness also checking Serve's proxy) does not apply to a
  RayCluster made by hand, as ours is.
* `ray-operator/controllers/ray/utils/constant.go` (blob 31177afe6eb9152ad6fd2bc9b3349b9584a9daed):
  the ports, paths, the wget command and every timing below (checked against it by
  test_kuberay_probes.py).
"""

from __future__ import annotations

import copy
import re
from typing import Any

RAY_CONTAINER_INDEX = 0
DEFAULT_DASHBOARD_PORT = 8265
DEFAULT_DASHBOARD_AGENT_LISTEN_PORT = 52365
RAY_AGENT_RAYLET_HEALTH_PATH = "api/local_raylet_healthz"
RAY_DASHBOARD_GCS_HEALTH_PATH = "api/gcs_healthz"
RAY_NODE_HEALTH_PATH = "/api/healthz"
BASE_WGET_HEALTH_COMMAND = "wget --tries 1 -T %d -q -O- http://localhost:%d/%s | grep success"
UNIFIED_HEALTH_CHECK_SINCE = (2, 53, 0)
# (initialDelaySeconds, timeoutSeconds, head's timeoutSeconds, periodSeconds, successThreshold, failureThreshold)
READINESS = (10, 2, 5, 5, 1, 10)
LIVENESS = (30, 2, 5, 5, 1, 120)


def _port(params: dict[str, str], key: str, default: int) -> int:
    """`getPort`: the rayStartParams value when it parses as an int32, else the default."""
    value = params.get(key, "")
    return int(value) if re.fullmatch(r"[+-]?\d+", value) and -(2**31) <= int(value) < 2**31 else default


def supports_unified_health_check(ray_version: str) -> bool:
    """`supportsUnifiedHealthCheck`: version.ParseGeneric(rayVersion) >= 2.53.0; unparsable: false."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?([-+].*)?", ray_version.strip())
    if not match:
        return False
    found = (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
    return found >= UNIFIED_HEALTH_CHECK_SINCE


def _default_probe(timings: tuple[int, ...], head: bool, action: dict[str, Any]) -> dict[str, Any]:
    initial, timeout, head_timeout, period, success, failure = timings
    return {
        "initialDelaySeconds": initial,
        "timeoutSeconds": head_timeout if head else timeout,
        "periodSeconds": period,
        "successThreshold": success,
        "failureThreshold": failure,
        **copy.deepcopy(action),
    }


def _action(head: bool, ray_version: str, params: dict[str, str]) -> dict[str, Any]:
    agent_port = _port(params, "dashboard-agent-listen-port", DEFAULT_DASHBOARD_AGENT_LISTEN_PORT)
    if supports_unified_health_check(ray_version):
        return {"httpGet": {"path": RAY_NODE_HEALTH_PATH, "port": agent_port}}
    raylet = BASE_WGET_HEALTH_COMMAND % (READINESS[1], agent_port, RAY_AGENT_RAYLET_HEALTH_PATH)
    dashboard_port = _port(params, "dashboard-port", DEFAULT_DASHBOARD_PORT)
    gcs = BASE_WGET_HEALTH_COMMAND % (READINESS[5], dashboard_port, RAY_DASHBOARD_GCS_HEALTH_PATH)
    commands = [raylet, gcs] if head else [raylet]
    return {"exec": {"command": ["bash", "-c", " && ".join(commands)]}}


def with_probes(
    container: dict[str, Any], head: bool, ray_version: str, params: dict[str, str]
) -> dict[str, Any]:
    """`initLivenessAndReadinessProbe` for a RayCluster: the container as KubeRay leaves it."""
    result = copy.deepcopy(container)
    action = _action(head, ray_version, params)
    if result.get("livenessProbe") is None:
        result["livenessProbe"] = _default_probe(LIVENESS, head, action)
    if result.get("readinessProbe") is None:
        result["readinessProbe"] = _default_probe(READINESS, head, action)
    return result


def ray_containers(cluster: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each group's Ray container (the one at RayContainerIndex) as KubeRay runs it, by group name
    (`head`, then each worker group's groupName)."""
    spec = cluster["spec"]
    version = str(spec.get("rayVersion", ""))
    groups = [("head", True, spec["headGroupSpec"])]
    groups += [(g["groupName"], False, g) for g in spec.get("workerGroupSpecs", [])]
    return {
        name: with_probes(
            group["template"]["spec"]["containers"][RAY_CONTAINER_INDEX],
            head,
            version,
            {str(k): str(v) for k, v in group.get("rayStartParams", {}).items()},
        )
        for name, head, group in groups
    }
