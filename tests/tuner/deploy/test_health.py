"""The Ray node health check finds this container's raylet as Ray's CLI does: from the raylet's
command line (ray/_private/services.py `_find_address_from_flag`: `--node_id=`, `--gcs-address=`).
Its GCS check runs for real against a running head and worker in tests/test_compose.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tuner.deploy import health

NODE = "4e07cdfb91188ac7b1565ecfbd4e0b956fc994e76a0cc1623abd7663"
RAYLET = [
    "/opt/venv/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet",
    "--raylet_socket_name=/tmp/ray/session_x/sockets/raylet",
    f"--node_id={NODE}",
    "--gcs-address=172.18.0.3:6379",
    "--num_prestart_python_workers=0",
]


def fake_proc(tmp_path: Path, processes: dict[int, tuple[str, list[str]]]) -> Path:
    for pid, (name, argv) in processes.items():
        folder = tmp_path / str(pid)
        folder.mkdir()
        (folder / "comm").write_text(name + "\n")
        (folder / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (tmp_path / "self").mkdir()  # not a process folder
    return tmp_path


def test_the_raylet_is_read_from_proc(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {1: ("tini", ["/sbin/tini", "--"]), 42: ("raylet", RAYLET)})
    seen = health.processes(proc)
    assert sorted(name for name, _ in seen) == ["raylet", "tini"]
    assert health.raylets(seen) == [health.Raylet(NODE, "172.18.0.3:6379")]


def test_no_raylet_is_unhealthy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc = fake_proc(tmp_path, {7: ("python", ["python", "-m", "tuner.deploy.health"])})
    real = health.processes
    monkeypatch.setattr(health, "processes", lambda: real(proc))
    assert health.healthy() == (False, "no raylet runs in this container")


def test_each_raylet_must_be_alive_in_its_gcs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = [*RAYLET[:2], "--node_id=" + "ab" * 28, "--gcs-address=172.18.0.9:6379"]
    seen = [("raylet", RAYLET), ("raylet", other)]
    monkeypatch.setattr(health, "processes", lambda: seen)
    monkeypatch.setattr(health, "alive_in_gcs", lambda raylet: raylet.node_id == NODE)
    ok, why = health.healthy()
    assert not ok and f"raylet {NODE} of the GCS at 172.18.0.3:6379: alive" in why
    assert "not alive in the GCS" in why


def ray_file(relative: str) -> Path:
    import ray

    return Path(ray.__file__).parent / relative


@pytest.mark.parametrize(
    ("relative", "blob"),
    [
        ("dashboard/modules/reporter/healthz_agent.py", "b654740ecbccdf288e84249004fd2a86b339a430"),
        ("dashboard/modules/reporter/utils.py", "7bb63a195744ed4eb887a3c03a92a585275c819b"),
        ("_private/services.py", "120a20582cb2f944515039f9b4960a9fd479d530"),
    ],
)
def test_the_ray_sources_the_check_follows_are_the_ones_cited(relative: str, blob: str) -> None:
    """A Ray upgrade that changes them fails here: read them again, then update health.py's blobs."""
    data = ray_file(relative).read_bytes()
    assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob
    assert blob in (health.__doc__ or "")


def test_ray_checks_the_raylet_as_alive_in_the_gcs() -> None:
    utils = ray_file("dashboard/modules/reporter/utils.py").read_text()
    assert "await self._gcs_client.async_check_alive([self._local_node_id], 0.1)" in utils
    agent = ray_file("dashboard/modules/reporter/healthz_agent.py").read_text()
    assert "self.raylet_health()" in agent and "self.local_gcs_health()" in agent


def test_the_raylet_found_is_the_one_rays_cli_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's own `find_node_ids` and `find_gcs_addresses`, over the same processes, agree."""
    from ray._private import services

    other = ["/usr/bin/python3", "-m", "tuner.deploy.health", "--node_id=not-a-raylet"]

    class Process:
        def __init__(self, cmdline: list[str]) -> None:
            self.info = {"cmdline": cmdline}

    monkeypatch.setattr(services.psutil, "process_iter", lambda attrs=None: [Process(RAYLET), Process(other)])
    services.find_gcs_addresses.cache_clear()
    try:
        ours = health.raylets([("raylet", RAYLET), ("python3", other)])
        assert [r.node_id for r in ours] == sorted(services.find_node_ids())
        assert {r.gcs_address for r in ours} == set(services.find_gcs_addresses())
    finally:
        services.find_gcs_addresses.cache_clear()
