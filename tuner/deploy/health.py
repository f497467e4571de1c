"""The health check of a Ray node container: `python -m tuner.deploy.health`, exit 0 when healthy.

Every Ray container runs it, as Compose's health check and as the RayCluster pods' own liveness and
readiness probes (KubeRay then injects none of its own, whose HTTP endpoint this image does not
serve: docs/kubernetes.md). It checks what Ray's own `/api/healthz` checks (Ray 2.60.0's
ray/dashboard/modules/reporter/healthz_agent.py, blob b654740ecbccdf288e84249004fd2a86b339a430,
`raylet_health` and `local_gcs_health`, through reporter/utils.py's `HealthChecker`, blob
7bb63a195744ed4eb887a3c03a92a585275c819b): the GCS answers and holds this container's raylet
alive. The raylet is found as Ray's CLI finds it (ray/_private/services.py, blob
120a20582cb2f944515039f9b4960a9fd479d530, `find_node_ids`). While the GCS is away a worker reports
unhealthy too; its raylet gives up by itself after Ray's reconnect timeout (60 s), well inside the
probes' failure threshold, and `ray start --block` exits with it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from tuner.upstream import ray_private

TIMEOUT_S = 5  # for the GCS call; the probes' timeoutSeconds is longer


@dataclass(frozen=True)
class Raylet:
    """A raylet process of this container: its node id and the GCS it was started with."""

    node_id: str
    gcs_address: str


def _flag(cmdline: list[str], name: str) -> str:
    for argument in " ".join(cmdline).split(" "):
        if argument.startswith(f"{name}="):
            return argument.split("=", 1)[1]
    return ""


def processes(proc: Path = Path("/proc")) -> list[tuple[str, list[str]]]:
    """(name, command line) of every process this container sees, from /proc."""
    found = []
    for folder in proc.iterdir():
        if not folder.name.isdigit():
            continue
        try:
            name = (folder / "comm").read_text().strip()
            cmdline = (folder / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        found.append((name, [part for part in cmdline if part]))
    return found


def raylets(seen: list[tuple[str, list[str]]]) -> list[Raylet]:
    """The raylets among `seen`, read from their command lines as Ray's CLI finds them."""
    found = []
    for _, cmdline in seen:
        if cmdline and os.path.basename(cmdline[0]) == "raylet":
            found.append(Raylet(_flag(cmdline, "--node_id"), _flag(cmdline, "--gcs-address")))
    return found


def alive_in_gcs(raylet: Raylet) -> bool:
    """Whether the raylet's GCS answers and holds it as alive (Ray's `check_local_raylet_liveness`,
    asked through rnntune's adapter of Ray's private names)."""
    return ray_private.alive_in_gcs(raylet.gcs_address, raylet.node_id, TIMEOUT_S)


def healthy() -> tuple[bool, str]:
    """(healthy, why) for the Ray node of this container: every raylet alive in its GCS."""
    found = raylets(processes())
    if not found:
        return False, "no raylet runs in this container"
    results = []
    for raylet in found:
        where = f"raylet {raylet.node_id} of the GCS at {raylet.gcs_address}"
        try:
            alive = alive_in_gcs(raylet)
        except Exception as error:  # the GCS did not answer: Ray's error says why
            results.append((False, f"{where}: {error}"))
            continue
        results.append((alive, f"{where}: {'alive' if alive else 'not alive in the GCS'}"))
    return all(ok for ok, _ in results), "; ".join(why for _, why in results)


def main() -> int:
    ok, why = healthy()
    print(why, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
