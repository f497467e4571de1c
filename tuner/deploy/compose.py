"""docker-compose.yml read as the source of the Kubernetes manifests.

Each Compose service gives its image, command, environment (names and `${NAME:-default}`
defaults), volumes, /dev/shm size, health check and user; values are resolved with Compose's own
interpolation rules against the same .env, so a setting added to or changed in Compose reaches
the manifests without a second copy that could drift. docker-compose.gpu.yml is merged the way
Compose merges an override (its environment entries replace the base's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = "docker-compose.yml"
GPU_OVERRIDE = "docker-compose.gpu.yml"

# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}, and $$ (a literal $).
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$\$")


class ComposeError(ValueError):
    """A Compose file or setting that the manifests cannot be made from."""


@dataclass(frozen=True)
class Service:
    """One Compose service as written (values not yet interpolated)."""

    name: str
    image: str
    command: list[str]
    environment: dict[str, str]
    volumes: list[str] = field(default_factory=list)
    ports: list[str] = field(default_factory=list)
    shm_size: str | None = None
    healthcheck: dict[str, Any] | None = None
    init: bool = False
    user: str | None = None  # Compose's `user: UID:GID`; None: the image's USER


def interpolate(text: str, settings: Mapping[str, str]) -> str:
    """`text` with every `${...}` replaced as Compose replaces it from `settings` (the .env)."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, operator, argument = match.group(1), match.group(2), match.group(3) or ""
        value = settings.get(name)
        if operator == ":-":
            return value if value else argument
        if operator == "-":
            return argument if value is None else value
        if operator in (":?", "?") and (not value if operator == ":?" else value is None):
            raise ComposeError(f"{name}: {argument or 'required'}")
        return value or ""

    return VAR.sub(substitute, text)


def variables(text: str) -> list[str]:
    """The setting names `text` refers to, in order."""
    return [m.group(1) for m in VAR.finditer(text) if m.group(1)]


def _service(name: str, raw: Mapping[str, Any]) -> Service:
    environment = {
        key: "" if value is None else str(value) for key, value in (raw.get("environment") or {}).items()
    }
    return Service(
        name=name,
        image=str(raw.get("image", "")),
        command=[str(part) for part in raw.get("command") or []],
        environment=environment,
        volumes=[str(v) for v in raw.get("volumes") or []],
        ports=[str(p) for p in raw.get("ports") or []],
        shm_size=None if raw.get("shm_size") is None else str(raw["shm_size"]),
        healthcheck=raw.get("healthcheck"),
        init=bool(raw.get("init", False)),
        user=None if raw.get("user") is None else str(raw["user"]),
    )


def _read(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())  # PyYAML resolves the `<<: *anchor` merges
    if not isinstance(data, dict) or not isinstance(data.get("services"), dict):
        raise ComposeError(f"{path}: no services")
    return data


def load_services(root: Path = ROOT, *, gpu: bool = False) -> dict[str, Service]:
    """The services of docker-compose.yml, with docker-compose.gpu.yml's environment merged if `gpu`."""
    services = _read(root / COMPOSE_FILE)["services"]
    if gpu:
        for name, override in _read(root / GPU_OVERRIDE)["services"].items():
            base = dict(services[name])
            base["environment"] = {**(base.get("environment") or {}), **(override.get("environment") or {})}
            services = {**services, name: base}
    return {name: _service(name, raw) for name, raw in services.items()}


def defaults(services: Mapping[str, Service]) -> dict[str, str]:
    """Compose's non-empty default of each setting read by an entry of its own name (`X: ${X:-default}`)."""
    found: dict[str, str] = {}
    for service in services.values():
        for name, raw in service.environment.items():
            match = VAR.fullmatch(raw)
            if match and match.group(1) == name and match.group(2) == ":-" and match.group(3):
                found.setdefault(name, match.group(3))
    return found


def with_defaults(settings: Mapping[str, str], services: Mapping[str, Service]) -> dict[str, str]:
    """`settings` with Compose's defaults where they leave a setting empty: what the containers see."""
    return {
        **settings,
        **{name: value for name, value in defaults(services).items() if not settings.get(name)},
    }


def duration_seconds(value: str) -> int:
    """A Compose duration ("5s", "1m30s", "10s") in whole seconds."""
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", value.strip())
    if not value.strip() or parts is None:
        raise ComposeError(f"not a Compose duration: {value!r}")
    hours, minutes, seconds = (int(p or 0) for p in parts.groups())
    return hours * 3600 + minutes * 60 + seconds


def healthcheck_command(healthcheck: Mapping[str, Any]) -> list[str]:
    """The command of a Compose health check as an exec argv (CMD-SHELL runs under sh -c)."""
    test = healthcheck["test"]
    if isinstance(test, str):
        return ["sh", "-c", interpolate(test, {})]
    kind, *argv = (str(part) for part in test)
    if kind == "CMD-SHELL":
        return ["sh", "-c", interpolate(" ".join(argv), {})]
    if kind == "CMD":
        return argv
    raise ComposeError(f"unsupported health check test {test!r}")


def container_port(mapping: str) -> int:
    """The container side of a Compose port mapping ("${BIND}:${PORT}:8000" -> 8000)."""
    return int(mapping.rsplit(":", 1)[-1].split("/")[0])


def docker_size_to_quantity(size: str) -> str:
    """A Docker size ("2gb", "512m", "1073741824") as a Kubernetes quantity ("2Gi", "512Mi", ...)."""
    match = re.fullmatch(r"(\d+)\s*([kmg]?)b?", size.strip().lower())
    if match is None:
        raise ComposeError(f"not a Docker size: {size!r}")
    number, unit = match.groups()
    return number + {"": "", "k": "Ki", "m": "Mi", "g": "Gi"}[unit]
