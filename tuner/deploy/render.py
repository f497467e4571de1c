"""The whole cluster from the .env and a values file: checked first, then every object in apply order.

`manifests` never holds a secret's value (pods read them from the Secret); `secret` is the Secret
alone, for `kubectl apply -f -` from a pipe, so the manifests can be kept, diffed and reviewed.
Both refuse the same inputs (`refusals`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tuner.deploy import api, postgres, storage, sweep
from tuner.deploy.compose import ROOT, load_services, with_defaults
from tuner.deploy.inputs import default_values, merged
from tuner.deploy.plan import Plan, make_plan
from tuner.deploy.pods import Json
from tuner.deploy.raycluster import ray_cluster
from tuner.deploy.refusals import check
from tuner.deploy.secret import secret_object


def checked_plan(settings: Mapping[str, str], user_values: Mapping[str, Any], root: Path = ROOT) -> Plan:
    """The plan of these inputs, or `Refused` naming every field to change.

    The rules see the settings as the containers would, with Compose's defaults filled in.
    """
    settings = with_defaults(settings, load_services(root))
    defaults = default_values()
    values = merged(defaults, dict(user_values))
    check(user_values, values, defaults, settings)
    return make_plan(settings, values, root)


def manifests(settings: Mapping[str, str], user_values: Mapping[str, Any], root: Path = ROOT) -> list[Json]:
    """Every object but the Secret: storage and the database first, the sweep Job last."""
    plan = checked_plan(settings, user_values, root)
    return [
        *storage.studies_claim(plan),
        *postgres.objects(plan),
        ray_cluster(plan),
        *api.objects(plan),
        *sweep.job(plan),
    ]


def secret(settings: Mapping[str, str], user_values: Mapping[str, Any], root: Path = ROOT) -> Json:
    """The Secret the pods read, with the .env's passwords and tokens."""
    return secret_object(checked_plan(settings, user_values, root))


class _PlainDumper(yaml.SafeDumper):
    """Writes a mapping used twice (labels, a probe) out twice instead of as an anchor and alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(objects: list[Json]) -> str:
    """A multi-document YAML stream, as `kubectl apply -f -` reads it."""
    return yaml.dump_all(objects, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False, width=1000)
