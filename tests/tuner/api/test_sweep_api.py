"""Studies made by real sweeps, driven over the API: create, start (a real `rnntune sweep` subprocess
on Ray), watch progress, stop cleanly, resume, best checkpoint download loaded back by the trainer."""

from __future__ import annotations

import hashlib
import time

import httpx
import pytest

import trainer
from tests.tuner.api.fixtures import live_server
from tuner.api import ApiSettings

pytestmark = pytest.mark.slow
TOKEN = "sweep-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweeps")
    settings = ApiSettings(db_url=f"sqlite:///{root / 's.db'}", storage_root=root / "storage", api_token=TOKEN)
    with live_server(settings) as url:
        with httpx.Client(base_url=url, timeout=30) as client:
            yield client


def wait_for(client, name, predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    seen = []
    while time.monotonic() < deadline:
        study = client.get(f"/studies/{name}").json()
        seen.append(study["status"])
        if predicate(study):
            return study, seen
        time.sleep(0.5)
    raise AssertionError(f"{what} did not happen in {timeout_s} s; statuses seen {sorted(set(seen))}: {study}")


def create(client, name, n_trials, parallel, max_steps):
    body = {"name": name, "space": "tiny", "n_trials": n_trials, "parallel": parallel, "sampler": "random",
            "seed": 0, "scheduler": "none", "overrides": {"set": {"max_steps": max_steps}}}
    response = client.post("/studies", json=body, headers=AUTH)
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "created"


def test_sweep_runs_to_the_end_and_its_best_checkpoint_loads(api, tmp_path):
    create(api, "api-run", n_trials=2, parallel=2, max_steps=60)
    started = api.post("/studies/api-run/start", headers=AUTH)
    assert started.status_code == 202 and started.json()["status"] == "running"
    assert api.post("/studies/api-run/start", headers=AUTH).status_code == 409
    study, seen = wait_for(api, "api-run", lambda s: s["status"] in ("finished", "failed"), 300, "the sweep ending")
    assert study["status"] == "finished", api.get("/studies/api-run").json()
    assert "running" in seen and study["progress"] == 1.0
    assert study["counts"]["COMPLETE"] == 2 and study["process"]["returncode"] == 0

    best = api.get("/studies/api-run/best").json()
    assert best["value"] == min(t["value"] for t in api.get("/studies/api-run/trials").json()["items"])
    assert len(best["learning_curve"]) >= 2
    download = api.get("/studies/api-run/best/checkpoint")
    assert download.status_code == 200
    assert hashlib.sha256(download.content).hexdigest() == download.headers["x-checkpoint-sha256"]
    path = tmp_path / "best.pt"
    path.write_bytes(download.content)
    model, config = trainer.load_checkpoint(path)
    assert config.learning_rate == pytest.approx(best["params"]["learning_rate"])
    assert config.max_steps == 60 and sum(p.numel() for p in model.parameters()) > 0

    plot = api.get("/studies/api-run/plots/parallel-coordinates").json()
    assert len(plot["trial_numbers"]) == 2
    assert api.get("/studies/api-run/sensitivity").json()["best"]["number"] == best["number"]
    assert api.post("/studies/api-run/start", headers=AUTH).status_code == 409  # finished


def test_stop_keeps_completed_trials_and_resume_continues(api):
    create(api, "api-stop", n_trials=8, parallel=1, max_steps=60)
    assert api.post("/studies/api-stop/start", headers=AUTH).status_code == 202
    before, _ = wait_for(api, "api-stop", lambda s: s["counts"]["COMPLETE"] >= 1, 240, "a trial completing")
    assert api.get("/studies").status_code == 200  # the API answers while the sweep runs
    stopped = api.post("/studies/api-stop/stop", headers=AUTH)
    assert stopped.status_code == 202 and stopped.json()["status"] == "stopping"
    study, _ = wait_for(api, "api-stop", lambda s: s["status"] == "stopped" and not s["process"]["running"],
                        120, "the sweep stopping")
    assert study["process"]["returncode"] == 130 and study["counts"]["RUNNING"] == 0
    assert before["counts"]["COMPLETE"] <= study["counts"]["COMPLETE"] < 8
    completed = {t["number"] for t in api.get("/studies/api-stop/trials", params={"state": "COMPLETE"}).json()["items"]}
    failed = api.get("/studies/api-stop/trials", params={"state": "FAIL"}).json()["items"]
    assert all(t["error"] for t in failed)  # a trial cut short says why
    assert api.post("/studies/api-stop/stop", headers=AUTH).status_code == 409

    assert api.post("/studies/api-stop/start", headers=AUTH).status_code == 202  # resume
    wait_for(api, "api-stop", lambda s: s["counts"]["RUNNING"] >= 1, 180, "the resumed trial starting")
    assert api.post("/studies/api-stop/stop", headers=AUTH).status_code == 202
    wait_for(api, "api-stop", lambda s: s["status"] == "stopped" and not s["process"]["running"],
             120, "the resumed sweep stopping")
    after = {t["number"] for t in api.get("/studies/api-stop/trials", params={"state": "COMPLETE"}).json()["items"]}
    assert completed <= after  # completed trials survive stop and resume
