"""Everything one rendering reads, gathered once: names, the .env, the values, Compose's services.

The Ray version KubeRay is told (`rayVersion`, which it checks before enabling token auth) is the
one pyproject.toml pins, so the image and the RayCluster cannot disagree about it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.deploy.compose import ROOT, Service, load_services
from tuner.deploy.names import Names
from tuner.storage.object_store import is_uri


@dataclass(frozen=True)
class Plan:
    """The inputs of one rendering, already checked by `refusals`."""

    names: Names
    settings: Mapping[str, str]
    values: Mapping[str, Any]
    services: Mapping[str, Service]  # docker-compose.yml
    gpu_services: Mapping[str, Service]  # with docker-compose.gpu.yml merged
    ray_version: str

    @property
    def gpu(self) -> bool:
        """Whether a GPU worker group is rendered."""
        return int(self.values["gpuWorkers"]["replicas"]) > 0

    @property
    def object_store(self) -> bool:
        """Whether the checkpoints live in an object store (`RNNTUNE_STORAGE=s3://...`): each pod
        then keeps its run folders' working copies on its own disk, and no shared claim is needed."""
        return is_uri(self.settings.get("RNNTUNE_STORAGE", ""))


def ray_version(root: Path = ROOT) -> str:
    """The Ray version pinned in pyproject.toml (`ray[tune]==X`)."""
    dependencies = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in dependencies:
        match = re.fullmatch(r"ray(\[[^]]*\])?==([\w.]+)", requirement.replace(" ", ""))
        if match:
            return match.group(2)
    raise ValueError("pyproject.toml pins no ray version (ray[tune]==X)")


def make_plan(settings: Mapping[str, str], values: Mapping[str, Any], root: Path = ROOT) -> Plan:
    return Plan(
        names=Names(values["name"], values["namespace"]),
        settings=settings,
        values=values,
        services=load_services(root),
        gpu_services=load_services(root, gpu=True),
        ray_version=ray_version(root),
    )
