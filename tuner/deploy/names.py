"""Object names, labels, and the Compose service names that become Kubernetes Service names.

Compose's containers reach each other by service name (`ray-head:6379`, `postgres`,
`http://api:8000`); in Kubernetes the same addresses are the Services rendered here (KubeRay names
the head's `<cluster>-head-svc`). Only the settings that hold an address are rewritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The environment entries of docker-compose.yml whose values name another service.
ADDRESS_SETTINGS = ("RAY_ADDRESS", "POSTGRES_HOST", "RNNTUNE_API_URL", "RNNTUNE_ALLOWED_HOSTS")


@dataclass(frozen=True)
class Names:
    """The name of every object of one rendered cluster, from its prefix (`values: name`)."""

    release: str
    namespace: str = ""

    @property
    def cluster(self) -> str:
        return self.release

    @property
    def head_service(self) -> str:
        return f"{self.release}-head-svc"  # KubeRay's name for the head's Service

    @property
    def api(self) -> str:
        return f"{self.release}-api"

    @property
    def postgres(self) -> str:
        return f"{self.release}-postgres"

    @property
    def secret(self) -> str:
        return f"{self.release}-secrets"

    @property
    def studies(self) -> str:
        return f"{self.release}-studies"

    @property
    def sweep(self) -> str:
        return f"{self.release}-sweep"

    def compose_hosts(self) -> dict[str, str]:
        """Compose service name -> the Kubernetes Service that answers for it."""
        return {"ray-head": self.head_service, "postgres": self.postgres, "api": self.api}

    def api_hosts(self) -> list[str]:
        """The names the API's Service is reached by inside the cluster."""
        hosts = [self.api]
        if self.namespace:
            hosts += [f"{self.api}.{self.namespace}", f"{self.api}.{self.namespace}.svc"]
            hosts.append(f"{self.api}.{self.namespace}.svc.cluster.local")
        return hosts

    def labels(self, component: str) -> dict[str, str]:
        return {
            "app.kubernetes.io/name": "rnntune",
            "app.kubernetes.io/instance": self.release,
            "app.kubernetes.io/component": component,
            "app.kubernetes.io/managed-by": "tuner.deploy",
        }

    def metadata(self, name: str, component: str) -> dict[str, object]:
        meta: dict[str, object] = {"name": name, "labels": self.labels(component)}
        if self.namespace:
            meta["namespace"] = self.namespace
        return meta


def translate_address(value: str, hosts: dict[str, str]) -> str:
    """`value` with each Compose service name used as a host replaced by its Kubernetes Service."""
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, hosts)) + r")(?![\w.-])")
    return pattern.sub(lambda m: hosts[m.group(1)], value)
