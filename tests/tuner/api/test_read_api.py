"""The read side of the API over real HTTP against real SQLite studies."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest

from tests.tuner.api.conftest import CHECKPOINT_BYTES
from tests.tuner.api.fixtures import BEST, EXPECTED_NEIGHBOURS


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server, timeout=30) as c:
        yield c


def test_list_studies_paginates_and_summarises(client):
    page = client.get("/studies", params={"limit": 2}).json()
    assert page["total"] == 4 and len(page["items"]) == 2
    rest = client.get("/studies", params={"offset": 2, "limit": 2}).json()
    names = [s["name"] for s in page["items"] + rest["items"]]
    assert names == ["fixed", "escape", "linked", "empty"]
    fixed = page["items"][0]
    assert fixed["status"] == "finished" and fixed["best_value"] == 4.0
    assert fixed["counts"] == {"COMPLETE": 7, "PRUNED": 1, "FAIL": 1, "RUNNING": 1, "WAITING": 0}
    assert fixed["progress"] == pytest.approx(9 / 10)
    assert rest["items"][1]["best_value"] is None


def test_study_detail(client):
    body = client.get("/studies/fixed").json()
    assert body["best_trial"]["number"] == 0 and body["best_trial"]["params"] == BEST
    assert body["user_attrs"]["space"] == "fixed" and body["process"] is None


def test_trials_filter_sort_paginate(client):
    best_first = client.get("/studies/fixed/trials", params={"sort": "objective", "limit": 3}).json()
    assert [t["number"] for t in best_first["items"]] == [0, 5, 4]
    assert best_first["total"] == 10
    worst = client.get(
        "/studies/fixed/trials", params={"sort": "-objective", "state": "COMPLETE", "limit": 1}
    )
    assert worst.json()["items"][0]["number"] == 6 and worst.json()["total"] == 7
    failed = client.get("/studies/fixed/trials", params={"state": "FAIL"}).json()["items"]
    assert [t["number"] for t in failed] == [8] and "Diverged" in failed[0]["error"]
    page2 = client.get("/studies/fixed/trials", params={"offset": 8, "limit": 5}).json()
    assert [t["number"] for t in page2["items"]] == [8, 9]


@pytest.mark.parametrize(
    "params, field, allowed",
    [
        ({"state": "DONE"}, "query.state", "'COMPLETE'"),
        ({"sort": "value"}, "query.sort", "'objective'"),
        ({"limit": 0}, "query.limit", "greater than or equal to 1"),
    ],
)
def test_bad_query_is_422_naming_field_and_allowed_values(client, params, field, allowed):
    response = client.get("/studies/fixed/trials", params=params)
    assert response.status_code == 422
    assert field in response.json()["detail"] and allowed in response.json()["detail"]


def test_trial_detail_and_404s(client):
    trial = client.get("/studies/fixed/trials/1").json()
    assert [p["step"] for p in trial["learning_curve"]] == [100, 200, 300]
    assert trial["distributions"]["learning_rate"]["log"] is True
    assert trial["node"] == "127.0.0.1" and trial["wall_time_s"] == 2.5
    assert trial["seconds_per_step"] == 0.02
    assert trial["device"] == "cuda:0" and trial["cuda_path_used"] == "eager"  # this trial fell back
    assert client.get("/studies/fixed/trials/99").status_code == 404
    assert client.get("/studies/nope").status_code == 404
    assert client.get("/studies/nope/trials").status_code == 404
    assert client.get("/studies/empty/best").status_code == 404
    assert client.get("/studies/empty/sensitivity").status_code == 404


def test_best_and_checkpoint_download(client):
    assert client.get("/studies/fixed/best").json()["number"] == 0
    response = client.get("/studies/fixed/best/checkpoint")
    assert response.status_code == 200
    assert response.content == CHECKPOINT_BYTES
    digest = hashlib.sha256(CHECKPOINT_BYTES).hexdigest()
    assert response.headers["x-checkpoint-sha256"] == digest
    assert json.loads(response.headers["x-trial-config"]) == {"cell": "lstm", **BEST}
    assert response.headers["x-trial-number"] == "0"


@pytest.mark.parametrize("study", ["escape", "linked"])
def test_checkpoint_outside_storage_is_refused(client, study):
    response = client.get(f"/studies/{study}/best/checkpoint")
    assert response.status_code == 404
    assert "outside" in response.json()["detail"]
    assert b"secret" not in response.content


def test_sensitivity_matches_hand_computed_neighbourhood(client):
    body = client.get("/studies/fixed/sensitivity", params={"include": "complete"}).json()
    assert body["best"]["number"] == 0 and body["fraction"] == 0.075 and body["n_completed"] == 7
    got = {n["number"]: n["delta"] for n in body["neighbours"]}
    assert got.keys() == EXPECTED_NEIGHBOURS.keys()
    for number, delta in EXPECTED_NEIGHBOURS.items():
        assert got[number] == pytest.approx(delta)
    assert body["summary"]["count"] == 2
    assert body["summary"]["max_delta"] == pytest.approx(0.3)
    assert body["summary"]["mean_delta"] == pytest.approx(0.2)
    lr = body["windows"]["learning_rate"]
    assert lr["window_low"] == pytest.approx(0.002 / 4**0.075, rel=1e-9)
    assert lr["window_high"] == pytest.approx(0.002 * 4**0.075, rel=1e-9)
    assert body["windows"]["mogrifier_rounds"]["window_low"] == pytest.approx(2.25)
    assert set(body["importances"]) == set(BEST)
    assert sum(body["importances"].values()) == pytest.approx(1.0)


def test_sensitivity_fraction_is_configurable_and_validated(client):
    wide = client.get("/studies/fixed/sensitivity", params={"fraction": 0.5}).json()
    assert {n["number"] for n in wide["neighbours"]} >= set(EXPECTED_NEIGHBOURS) | {2, 4, 5}
    for bad in (0, -0.1, 1.5, "x"):
        response = client.get("/studies/fixed/sensitivity", params={"fraction": bad})
        assert response.status_code == 422 and "query.fraction" in response.json()["detail"]


def test_parallel_coordinates_json_and_html(client):
    plot = client.get("/studies/fixed/plots/parallel-coordinates", params={"include": "complete"}).json()
    trace = plot["figure"]["data"][0]
    assert trace["type"] == "parcoords"
    assert sorted(plot["trial_numbers"]) == [0, 1, 2, 3, 4, 5, 6]
    labels = [d["label"] for d in trace["dimensions"]]
    assert labels == ["learning_rate (log)", "input_dropout", "mogrifier_rounds", "objective"]
    lr_axis = trace["dimensions"][0]
    assert lr_axis["range"] == pytest.approx([-3.0, -2.39794], abs=1e-5)
    assert "0.002" in lr_axis["ticktext"]
    colours = dict(zip(plot["trial_numbers"], trace["line"]["color"]))
    assert {n for n, c in colours.items() if c == 1.0} == {0, 1, 3}
    assert max(c for n, c in colours.items() if n not in (0, 1, 3)) < 1.0
    assert plot["trial_numbers"][-3:] == [0, 1, 3]  # red lines drawn last, on top
    page = client.get("/studies/fixed/plots/parallel-coordinates", params={"format": "html"})
    assert page.headers["content-type"].startswith("text/html")
    assert '<script src="/static/vendor/plotly.min.js">' in page.text and "cdn" not in page.text.lower()
    js = client.get("/static/vendor/plotly.min.js")
    assert js.status_code == 200 and len(js.content) > 1_000_000


def test_openapi_docs_served(client):
    assert client.get("/docs").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    assert "/studies/{name}/sensitivity" in paths and "/studies/{name}/best/checkpoint" in paths
