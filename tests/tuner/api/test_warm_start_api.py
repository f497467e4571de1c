"""`warm_start` on POST /studies over real HTTP: stored and shown by GET /studies/{name}, refused
with 422 naming the field when the source or the sampler cannot serve."""

from __future__ import annotations

import httpx
import pytest

from tests.tuner.api.fixtures import live_server
from tests.tuner.edge_study import edge_study
from tuner.api import ApiSettings
from tuner.samplers import WARM_START_SAMPLERS

NEW = {"name": "wt2", "space": "tiny", "n_trials": 4, "parallel": 1}


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    root = tmp_path_factory.mktemp("warm")
    db = f"sqlite:///{root / 's.db'}"
    edge_study(db, "ptb", root / "storage")
    settings = ApiSettings(db_url=db, storage_root=root / "storage")
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def test_a_warm_started_study_names_its_source(api):
    r = api.post("/studies", json={**NEW, "warm_start": "ptb"})
    assert r.status_code == 201, r.text
    assert r.json()["warm_start"] == {"studies": ["ptb"], "trials": 10}
    assert api.get("/studies/wt2").json()["warm_start"] == {"studies": ["ptb"], "trials": 10}
    assert api.get("/studies/ptb").json()["warm_start"] is None


def test_bad_warm_starts_are_422_naming_the_field(api):
    cases = [
        ({"warm_start": "ghost"}, "body: warm_start: no study named 'ghost'"),
        (
            {"warm_start": "ptb", "sampler": "tpe"},
            f"body: warm_start: sampler 'tpe' takes no prior trials; use one of {', '.join(WARM_START_SAMPLERS)}",
        ),
        ({"warm_start": "../ptb"}, "body.warm_start: String should match pattern"),
    ]
    for extra, detail in cases:
        r = api.post("/studies", json={**NEW, "name": "refused", **extra})
        assert r.status_code == 422 and detail in r.json()["detail"], (extra, r.text)
    assert api.get("/studies/refused").status_code == 404
