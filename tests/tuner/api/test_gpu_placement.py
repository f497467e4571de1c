"""GPU placement over REST, on a real Ray cluster with logical GPUs (Ray schedules them like real
ones on a CPU machine): a study with `gpus_per_trial: 0.5` on 2 GPUs runs 4 trials at once, each
seeing the GPU Ray assigned it; a study asking for a GPU on a cluster without any is refused at
`/start` with 409 naming `gpus_per_trial` instead of waiting in PENDING forever.

Each Ray head is `docker/entrypoint head` (`ray start --head --block`) with its own temp dir and
ports, stopped by PID (tests/test_cluster.py's Processes); the API serves in this process and
launches its sweeps with RAY_ADDRESS pointing at that head.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.postgres import free_port
from tests.test_cluster import BIN, ENTRYPOINT, Processes, node_ports, wait_for
from tests.tuner.api.fixtures import live_server
from tuner.api import ApiSettings

pytestmark = pytest.mark.slow
TOKEN = "gpu-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# A few seconds of training per trial on a shared CPU: long enough for the four to overlap.
# device cpu: the logical GPUs only pace the trials (with `auto`, CPU-only torch fails them).
SETTINGS = {
    "device": "cpu",
    "max_steps": 150,
    "eval_every": 50,
    "hidden_size": 16,
    "max_eval_tokens": 1000,
    "eval_batch_size": 64,
}


@pytest.fixture
def ray_head(monkeypatch) -> Iterator[Callable[[int, int], str]]:
    """Start a Ray head offering `cpus` CPUs and `gpus` logical GPUs; RAY_ADDRESS points at it."""
    root = Path(tempfile.mkdtemp(prefix="rnt-gpu-", dir="/tmp"))  # short: Ray's socket paths
    procs = Processes(root)

    def start(cpus: int, gpus: int) -> str:
        port = free_port()
        env = {
            "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(root),
            "RAY_AUTH_MODE": "disabled",
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_HEAD_PORT": str(port),
            "RAY_HEAD_NUM_CPUS": str(cpus),
            "RAY_HEAD_NUM_GPUS": str(gpus),
        }
        head = procs.start(
            f"ray-head-{port}", [ENTRYPOINT, "head", "--temp-dir", root / f"ray-{port}", *node_ports()], env
        )
        wait_for("the Ray head", lambda: "Ray runtime started" in head.log.read_text(), 120, [head])
        address = f"127.0.0.1:{port}"
        monkeypatch.setenv("RAY_ADDRESS", address)
        monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
        return address

    try:
        yield start
    finally:
        procs.stop_all()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def api_factory(tmp_path):
    def serve():
        settings = ApiSettings(
            db_url=f"sqlite:///{tmp_path / 's.db'}", storage_root=tmp_path / "storage", api_token=TOKEN
        )
        return live_server(settings)

    return serve


def create(
    client: httpx.Client, name: str, gpus_per_trial: float, n_trials: int, parallel: int, **settings
) -> None:
    body = {
        "name": name,
        "space": "tiny",
        "n_trials": n_trials,
        "parallel": parallel,
        "gpus_per_trial": gpus_per_trial,
        "sampler": "random",
        "seed": 0,
        "scheduler": "none",
        "overrides": {"set": {**SETTINGS, **settings}},
    }
    response = client.post("/studies", json=body, headers=AUTH)
    assert response.status_code == 201, response.text


def _overlap(spans: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    most = current = 0
    for _, change in events:
        current += change
        most = max(most, current)
    return most


def test_half_a_gpu_per_trial_runs_four_trials_on_two_gpus(ray_head, api_factory):
    ray_head(cpus=4, gpus=2)
    with api_factory() as url, httpx.Client(base_url=url, timeout=120) as api:
        create(api, "packed", gpus_per_trial=0.5, n_trials=4, parallel=4)
        started = api.post("/studies/packed/start", headers=AUTH)
        assert started.status_code == 202, started.text
        deadline = time.monotonic() + 600
        while (study := api.get("/studies/packed").json())["status"] not in ("finished", "failed"):
            assert time.monotonic() < deadline, study
            time.sleep(1)
        assert study["status"] == "finished" and study["counts"]["COMPLETE"] == 4, study
        trials = [api.get(f"/studies/packed/trials/{n}").json() for n in range(4)]
        # `auto` with a reserved GPU and CPU-only torch: the trial fails with the cause instead of
        # training on the CPU while it holds the GPU.
        create(api, "unusable", gpus_per_trial=1, n_trials=1, parallel=1, device="auto")
        assert api.post("/studies/unusable/start", headers=AUTH).status_code == 202
        while api.get("/studies/unusable").json()["status"] not in ("finished", "failed"):
            assert time.monotonic() < deadline
            time.sleep(1)
        unusable = api.get("/studies/unusable/trials/0").json()
    assert unusable["state"] == "FAIL" and "reserved GPU 0 but cannot use CUDA" in unusable["error"], unusable
    attrs = [t["user_attrs"] for t in trials]
    assert sorted(i for a in attrs for i in a["gpu_ids"]) == ["0", "0", "1", "1"], attrs
    assert {a["device"] for a in attrs} == {"cpu"} and {a["cuda_path_used"] for a in attrs} == {"cpu"}
    spans = [
        (
            (Path(a["run_dir"]) / "config.yaml").stat().st_mtime,
            (Path(a["run_dir"]) / "result.json").stat().st_mtime,
        )
        for a in attrs
    ]
    assert _overlap(spans) == 4, spans  # all four trained at once: two per GPU


def test_a_gpu_study_on_a_cluster_without_gpus_is_refused_at_start(ray_head, api_factory):
    ray_head(cpus=2, gpus=0)
    with api_factory() as url, httpx.Client(base_url=url, timeout=120) as api:
        create(api, "no-gpu", gpus_per_trial=1, n_trials=2, parallel=1)
        refused = api.post("/studies/no-gpu/start", headers=AUTH)
        assert refused.status_code == 409, refused.text
        detail = refused.json()["detail"]
        assert detail.startswith("gpus_per_trial 1") and "offers is 0" in detail, detail
        study = api.get("/studies/no-gpu").json()
        assert study["status"] == "created" and not study.get("process")  # nothing was launched
