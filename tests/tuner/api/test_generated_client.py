"""The schema serves clients other people generate: a third party's generator (openapi-python-client)
builds a client from `/openapi.json`, and the main routes, the importances included, parse into its
typed models over real HTTP. Every schema has its own name and every operation a short, unique id
(the route function's name), which is what such a generator names its models and functions."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.tuner.api.fixtures import live_server, make_study
from tuner.api import ApiSettings

PACKAGE = "rnntune_client"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("client")
    db_url = f"sqlite:///{root / 's.db'}"
    make_study(db_url, "fixed", root / "storage" / "fixed")
    with live_server(ApiSettings(db_url=db_url, storage_root=root / "storage")) as url:
        yield url, root


def test_schema_names_and_operation_ids_are_unique_and_short(served):
    url, _ = served
    schema = httpx.get(f"{url}/openapi.json").json()
    names = list(schema["components"]["schemas"])
    titles = Counter(s.get("title", n) for n, s in schema["components"]["schemas"].items())
    assert [t for t, count in titles.items() if count > 1] == []
    assert not [n for n in names if "__" in n], names  # FastAPI's module-qualified fallback names
    ids = [
        op["operationId"] for ops in schema["paths"].values() for op in ops.values() if "operationId" in op
    ]
    assert len(ids) == len(set(ids)) and {"create_study", "list_studies", "list_trials"} <= set(ids)
    assert all(len(i) <= 30 and i.isidentifier() for i in ids), ids


def test_a_generated_client_calls_the_main_routes(served, tmp_path):
    url, _ = served
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(httpx.get(f"{url}/openapi.json").json()))
    out = tmp_path / PACKAGE
    bin_dir = Path(sys.executable).parent  # the generator formats its output with this ruff
    generated = subprocess.run(
        [
            str(bin_dir / "openapi-python-client"),
            *("generate", "--path", str(spec), "--output-path", str(out), "--meta", "none"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"},
    )
    assert generated.returncode == 0, generated.stdout[-3000:] + generated.stderr[-3000:]
    assert "Unable to" not in generated.stdout + generated.stderr, generated.stdout + generated.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        client_module = importlib.import_module(PACKAGE)
        client = client_module.Client(base_url=url)

        def call(tag: str, operation: str, **kw):
            module = importlib.import_module(f"{PACKAGE}.api.{tag}.{operation}")
            return module.sync(client=client, **kw)

        studies = call("studies", "list_studies")
        assert [s.name for s in studies.items] == ["fixed"]
        study = call("studies", "get_study", name="fixed")
        assert study.name == "fixed" and study.best_trial.value == 4.0
        trials = call("trials", "list_trials", name="fixed")
        assert len(trials.items) > 5 and trials.items[0].number == 0
        trial = call("trials", "get_trial", name="fixed", number=0)
        assert trial.value == 4.0
        importances = call("analysis", "get_importances", name="fixed")
        assert type(importances).__name__ == "Importances"  # parsed, not dropped
        assert type(importances.bootstrap).__name__ == "ImportancesBootstrap"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]
