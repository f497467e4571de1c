"""`POST /studies/{name}/widen` over real HTTP on a real SQLite study: the crowded range widened,
the history in GET /studies/{name}, 409 while a sweep drives the study, 422 naming the field."""

from __future__ import annotations

import httpx
import pytest

from tests.tuner.api.fixtures import live_server
from tests.tuner.edge_study import edge_study
from tuner.api import ApiSettings
from tuner.storage.lease import acquire, lease_engine, new_owner
from tuner.storage.study import load_study

TOKEN = "widen-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api(tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    edge_study(db, "edgy", tmp_path / "storage")
    settings = ApiSettings(db_url=db, storage_root=tmp_path / "storage", api_token=TOKEN)
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client, db


def test_widen_the_alerted_edge_and_add_trials(api):
    client, db = api
    assert client.get("/studies/edgy/boundaries").json()["alerts"][0]["edge"] == "low"
    r = client.post("/studies/edgy/widen", json={"param": "learning_rate", "add_trials": 4}, headers=AUTH)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["change"]["param"] == "learning_rate" and body["change"]["edge"] == "low"
    assert body["change"]["old"] == [0.001, 0.004] and body["change"]["new"] == [0.0005, 0.004]
    assert body["n_trials"] == 14 and body["status"] == "stopped"  # finished before: now startable
    study = client.get("/studies/edgy").json()
    assert study["widened"] == [body["change"]] and study["n_trials"] == 14
    assert study["user_attrs"]["space_def"]["params"]["learning_rate"]["low"] == 0.0005
    # the alert was about the old range; in the wider one the best trials no longer crowd an edge
    assert client.get("/studies/edgy/boundaries").json()["alerts"] == []
    assert len(load_study("edgy", db).trials) == 10  # nothing stored is touched


def test_bad_input_is_422_naming_the_field(api):
    client, db = api
    cases = [
        ({"param": "learning_rate", "edge": "up"}, "body.edge: Input should be 'low', 'high' or 'both'"),
        (
            {"param": "hidden_size"},
            "body.param: parameter hidden_size: not tuned by space tiny; tuned: learning_rate",
        ),
        (
            {"param": "l2_penalty"},
            "body.edge: parameter l2_penalty: study 'edgy' has no boundary alert for it",
        ),
        (
            {"param": "input_dropout", "edge": "low"},
            "body.edge: parameter input_dropout: its low bound 0 is already",
        ),
        (
            {"param": "learning_rate", "add_trials": -1},
            "body.add_trials: Input should be greater than or equal to 0",
        ),
        ({"param": "learning_rate", "size": 2}, "body.size: Extra inputs are not permitted"),
    ]
    for body, detail in cases:
        r = client.post("/studies/edgy/widen", json=body, headers=AUTH)
        assert r.status_code == 422 and detail in r.json()["detail"], (body, r.text)
    assert "widened" not in load_study("edgy", db).user_attrs
    assert (
        client.post("/studies/ghost/widen", json={"param": "learning_rate"}, headers=AUTH).status_code == 404
    )
    assert client.post("/studies/edgy/widen", json={"param": "learning_rate"}).status_code == 401


def test_a_refused_trial_count_widens_nothing_and_a_retry_widens_once(api):
    client, db = api
    r = client.post(
        "/studies/edgy/widen", json={"param": "learning_rate", "add_trials": 100_000}, headers=AUTH
    )
    assert r.status_code == 422 and "n_trials" in r.text and "100000" in r.text, r.text
    attrs = load_study("edgy", db).user_attrs
    assert "widened" not in attrs and attrs["space_def"]["params"]["learning_rate"]["low"] == 0.001
    assert attrs["status"] == "finished"
    r = client.post("/studies/edgy/widen", json={"param": "learning_rate", "add_trials": 2}, headers=AUTH)
    assert r.status_code == 200, r.text
    attrs = load_study("edgy", db).user_attrs
    assert [h["new"] for h in attrs["widened"]] == [[0.0005, 0.004]]  # once, from the old range
    assert attrs["spec"]["n_trials"] == 12 and attrs["status"] == "stopped"


def test_refused_while_a_sweep_drives_the_study(api):
    client, db = api
    engine = lease_engine(db)
    acquire(engine, "edgy", new_owner())  # a live driver holds the study's lease
    r = client.post("/studies/edgy/widen", json={"param": "learning_rate"}, headers=AUTH)
    assert r.status_code == 409 and "stop that sweep to widen a range" in r.json()["detail"]
    assert "widened" not in load_study("edgy", db).user_attrs
    engine.dispose()
