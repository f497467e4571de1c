"""`GET /studies/{name}/boundaries` over HTTP: alerts when the best trials crowd a range's edge."""

from __future__ import annotations

import httpx

from tests.tuner.api.fixtures import live_server, make_edge_study
from tuner.api import ApiSettings


def test_alert_names_the_parameter_and_the_edge(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'edgy.db'}"
    make_edge_study(db_url, "edgy", tmp_path / "edgy")
    with live_server(ApiSettings(db_url=db_url, storage_root=tmp_path)) as server:
        r = httpx.get(f"{server}/studies/edgy/boundaries")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["n_complete"] == 10
    assert [(a["param"], a["edge"], a["bound"]) for a in body["alerts"]] == [("learning_rate", "low", 0.001)]
    assert "3 of the 3 best trials" in body["alerts"][0]["message"]


def test_no_alerts_without_a_stored_space_and_404_for_unknown(server):
    r = httpx.get(f"{server}/studies/fixed/boundaries")
    assert r.status_code == 200 and r.json()["alerts"] == []
    assert httpx.get(f"{server}/studies/nope/boundaries").status_code == 404
