"""Studies made by real sweeps, driven over the API: create, start (a real `rnntune sweep` subprocess
on Ray), watch progress, stop cleanly, resume, best checkpoint download loaded back by the trainer."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import trainer
from tests.conftest import TINY_SETTINGS
from tests.postgres import free_port
from tests.tuner.api.fixtures import live_server
from tuner.api import ApiSettings

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]
TOKEN = "sweep-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweeps")
    settings = ApiSettings(
        db_url=f"sqlite:///{root / 's.db'}", storage_root=root / "storage", api_token=TOKEN
    )
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
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
    raise AssertionError(
        f"{what} did not happen in {timeout_s} s; statuses seen {sorted(set(seen))}: {study}"
    )


def create(client, name, n_trials, parallel, max_steps, settings: dict | None = None):
    """Create `name` on the tiny space; `settings` fix more trainer settings (TINY_SETTINGS: a
    smaller model, for tests whose trials may be quick)."""
    body = {
        "name": name,
        "space": "tiny",
        "n_trials": n_trials,
        "parallel": parallel,
        "sampler": "random",
        "seed": 0,
        "scheduler": "none",
        # 64 evaluation streams: the end-of-run figures take a quarter of the sequential steps.
        "overrides": {"set": {"eval_batch_size": 64, **(settings or {}), "max_steps": max_steps}},
    }
    response = client.post("/studies", json=body, headers=AUTH)
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "created"


def test_sweep_runs_to_the_end_and_its_best_checkpoint_loads(api, tmp_path, joined_ray, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", joined_ray["RAY_ADDRESS"])  # the API passes RAY_* to its sweeps
    create(api, "api-run", n_trials=2, parallel=2, max_steps=60, settings=TINY_SETTINGS)
    started = api.post("/studies/api-run/start", headers=AUTH)
    assert started.status_code == 202 and started.json()["status"] == "running"
    assert api.post("/studies/api-run/start", headers=AUTH).status_code == 409
    study, seen = wait_for(
        api, "api-run", lambda s: s["status"] in ("finished", "failed"), 300, "the sweep ending"
    )
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


# --- the API as its own process: killed mid-sweep, restarted; secrets kept from Ray ---------------


@contextlib.contextmanager
def api_process(tmp_path, env: dict[str, str], db: str | None = None, headers: dict | None = None):
    """`rnntune serve` as a subprocess on a free port; yields (process, client)."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "tuner.cli",
        "serve",
        "--port",
        str(port),
        "--storage",
        str(tmp_path / "storage"),
    ]
    log = (tmp_path / f"api-{port}.log").open("w")
    proc = subprocess.Popen(
        cmd + (["--db", db] if db else []),
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, headers=headers or {})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if client.get("/studies").status_code in (200, 401):
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (
                tmp_path / f"api-{port}.log"
            ).read_text()
            time.sleep(0.3)
        yield proc, client
    finally:
        client.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(90)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _completed(client, name) -> dict[int, tuple]:
    items = client.get(f"/studies/{name}/trials", params={"state": "COMPLETE", "limit": 500}).json()["items"]
    return {t["number"]: (t["value"], t["params"]) for t in items}


def _environs_of(driver: int) -> tuple[dict[int, bytes], list[str]]:
    """The environment and command line of every process under the sweep driver `driver`."""
    environs, names = {}, []
    for pid in _descendants(driver):
        try:
            environs[pid] = Path(f"/proc/{pid}/environ").read_bytes()
            names.append(
                Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
        except OSError:
            continue
    return environs, names


def test_api_killed_mid_sweep_adopts_stops_and_resumes_it_and_no_secret_reaches_ray(tmp_path, postgres_url):
    """kill -9 of the API while its sweep runs: the sweep runs on; a restarted API shows it running
    (its lease is live), stops it (a second stop is refused; trials cut short say why) and starts it
    again through REST; no completed trial is lost or changed, none is left RUNNING.

    The same sweep checks the secrets: the tokens and the database URL (with its password) are in the
    API's environment; none of the Ray processes the sweep starts (GCS, raylet, workers training the
    trials) holds them, and no file the sweeps or the APIs write holds the password."""
    password = postgres_url.split(":")[2].split("@")[0]
    env = {
        "RNNTUNE_API_TOKEN": TOKEN,
        "RNNTUNE_API_READ_TOKEN": "read-secret-2",
        "RNNTUNE_DB_URL": postgres_url,
    }
    with api_process(tmp_path, env, headers=AUTH) as (api, client):
        # Four trials: one completed before the API's kill, and three for the stop to cut one short
        # after the API's restart.
        create(client, "adopt", n_trials=4, parallel=1, max_steps=100)
        driver = client.post("/studies/adopt/start").json()["process"]["pid"]
        wait_for(
            client,
            "adopt",
            lambda s: s["counts"]["RUNNING"] >= 1 and s["driver"] and s["driver"]["state"] == "live",
            240,
            "a trial running",
        )
        time.sleep(3)  # the trial's worker is up and training
        environs, names = _environs_of(driver)
        assert any("gcs_server" in n for n in names) and any("raylet" in n for n in names), names
        assert any(n.startswith("ray::") for n in names), names  # the trial workers
        for pid, environ in environs.items():
            for secret in (TOKEN.encode(), b"read-secret-2", password.encode(), b"RNNTUNE_DB_URL"):
                assert secret not in environ, f"{secret!r} in the environment of pid {pid}"
        wait_for(
            client,
            "adopt",
            lambda s: s["counts"]["COMPLETE"] >= 1 and s["counts"]["RUNNING"] >= 1,
            300,
            "a trial completing",
        )
        api.send_signal(signal.SIGKILL)
        api.wait(30)
    os.kill(driver, 0)  # the sweep survived its API
    with api_process(tmp_path, env, headers=AUTH) as (_, client):
        study = client.get("/studies/adopt").json()
        assert study["status"] == "running" and study["process"] is None
        assert study["driver"]["state"] == "live" and study["driver"]["pid"] == driver
        assert client.post("/studies/adopt/start").status_code == 409  # one driver per study
        before = _completed(client, "adopt")
        stopped = client.post("/studies/adopt/stop")
        assert stopped.status_code == 202 and stopped.json()["driver"]["stop_requested"]
        study, _ = wait_for(
            client, "adopt", lambda s: s["status"] == "stopped", 120, "the adopted sweep stopping"
        )
        assert study["counts"]["RUNNING"] == 0 and study["driver"]["state"] == "stopped"
        assert client.post("/studies/adopt/stop").status_code == 409  # nothing left to stop
        failed = client.get("/studies/adopt/trials", params={"state": "FAIL"}).json()["items"]
        assert all(t["error"] for t in failed)  # a trial cut short says why
        after_stop = _completed(client, "adopt")
        assert before.items() <= after_stop.items() and len(after_stop) < 4
        assert client.post("/studies/adopt/start").status_code == 202
        study, _ = wait_for(
            client, "adopt", lambda s: s["status"] in ("finished", "failed"), 600, "the resumed sweep ending"
        )
        assert study["status"] == "finished" and study["counts"]["RUNNING"] == 0
        assert after_stop.items() <= _completed(client, "adopt").items()
    # Nor is the password written anywhere: the sweeps' logs (which name the database, redacted),
    # run folders, checkpoints and the APIs' own logs.
    (sweep_log,) = (tmp_path / "storage" / "sweep-logs").glob("*.log")  # both starts append to it
    assert "***" in sweep_log.read_text()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert password.encode() not in path.read_bytes(), f"password written to {path}"
