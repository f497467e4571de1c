"""The renderer's two inputs: the .env that Compose reads, and a values file over values.yaml.

The .env is read with the rules Compose applies to it (KEY=VALUE lines, `#` comments, one pair of
surrounding quotes dropped), so the same file drives both. The values file is merged key by key over
the defaults in values.yaml; what it may contain is the business of `refusals`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

DEFAULT_VALUES = Path(__file__).with_name("values.yaml")


def parse_env(text: str) -> dict[str, str]:
    """The settings of an .env file's text."""
    settings: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        settings[key.strip().removeprefix("export ").strip()] = value
    return settings


def read_env(path: Path) -> dict[str, str]:
    """The settings of the .env file at `path`."""
    return parse_env(path.read_text())


def default_values() -> dict[str, Any]:
    """values.yaml: every Kubernetes-only choice with its default."""
    data = yaml.safe_load(DEFAULT_VALUES.read_text())
    assert isinstance(data, dict)
    return data


def read_values(path: Path | None) -> dict[str, Any]:
    """The user's values file as written ({} for none); `merged` lays it over the defaults."""
    if path is None:
        return {}
    data = yaml.safe_load(path.read_text())
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a values file is a mapping of keys to values")
    return data


def merged(defaults: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`overrides` laid over `defaults`: mappings merge key by key, anything else replaces."""
    result = dict(defaults)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result
