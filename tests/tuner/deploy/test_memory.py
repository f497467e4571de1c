"""Every pod's memory limit fits what it runs: measured, not guessed.

Each container command of the rendered manifests that is not a Ray node (those are sized by
values.yaml for their trials) runs here for real: the API's `rnntune serve` (what docker/entrypoint's
`api` role execs) on 127.0.0.1 with a SQLite study, and the sweep Job's `rnntune remote` against it,
with the Job's rendered environment. Each runs under a fresh Python parent that reports its peak
resident memory (`RUSAGE_CHILDREN`), and the rendered `resources.limits.memory` must be at least
HEADROOM times it: a 256Mi Job limit under a ~500 MB client was OOM-killed before the study existed.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.tuner.deploy.inputs import ROOT, containers, env_of, example_settings, render

HEADROOM = 1.5
RAY_ROLES = ("head", "worker")  # docker/entrypoint's Ray nodes
# Runs argv (after the output file) as its one child, passes SIGTERM on, and writes the child's peak
# resident memory in KiB (Linux's ru_maxrss unit) to the output file once it has exited.
MEASURE = """
import resource, signal, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
signal.signal(signal.SIGTERM, lambda *_: child.terminate())
code = child.wait()
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""
QUANTITY = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?")
UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
MIB = 2**20


def quantity_bytes(text: str) -> float:
    """A Kubernetes memory quantity ("256Mi", "4Gi", "1G", "1073741824") in bytes."""
    match = QUANTITY.fullmatch(text)
    assert match is not None, f"not a memory quantity: {text!r}"
    return float(match.group(1)) * UNITS.get(match.group(2) or "", 1)


def test_quantities_parse_as_kubernetes_reads_them() -> None:
    assert [quantity_bytes(q) for q in ("256Mi", "1Gi", "1G", "1.5Gi", "1000")] == [
        256 * MIB,
        2**30,
        10**9,
        1.5 * 2**30,
        1000,
    ]


def rnntune() -> str:
    """The installed `rnntune` console script (the image's), next to this Python."""
    script = Path(sys.executable).with_name("rnntune")
    assert script.is_file(), f"{script}: install the package (make setup)"
    return str(script)


def serve_argv_of_api_role() -> list[str]:
    """What docker/entrypoint execs for the API container's `api` role (after joining Ray): `rnntune serve ...`."""
    text = (ROOT / "docker" / "entrypoint").read_text()
    branch = re.search(r"^  api\)\n(.*?)\n    ;;", text, re.MULTILINE | re.DOTALL)
    assert branch is not None, "docker/entrypoint has no `api)` role"
    execs = re.findall(r"^\s*exec (rnntune \w+)", branch.group(1), re.MULTILINE)
    assert execs == ["rnntune serve"], execs
    return ["serve"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def peak_bytes(report: Path) -> int:
    return int(report.read_text()) * 1024


@contextmanager
def measured_serve(tmp_path: Path, environ: dict[str, str]) -> Iterator[tuple[str, Path]]:
    """`rnntune serve` on a free loopback port under MEASURE; yields (its URL, the peak's report)."""
    port, report = free_port(), tmp_path / "serve.peak"
    argv = [rnntune(), *serve_argv_of_api_role(), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--db", f"sqlite:///{tmp_path / 'studies.db'}", "--storage", str(tmp_path / "studies")]
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-c", MEASURE, str(report), *argv], env=environ, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                httpx.get(f"{url}/openapi.json", timeout=5).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "rnntune serve did not answer in 180 s"
                time.sleep(0.5)
        yield url, report
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()


def job_command(container: dict[str, Any]) -> list[str]:
    """The Job's argv without `--start`: starting would launch a real Ray sweep inside the API, and
    what the client holds (its imports, a few JSON bodies) does not depend on it."""
    args = list(container["args"])
    assert args[:2] == ["rnntune", "remote"] and "create" in args, args
    return [rnntune(), *[a for a in args[1:] if a != "--start"]]


def job_environ(container: dict[str, Any], api: str, base: dict[str, str]) -> dict[str, str]:
    """The Job's rendered environment, with the Secret's values and the API at `api`."""
    settings = example_settings()
    environ = dict(base)
    for name, value in env_of(container).items():
        environ[name] = settings[name] if isinstance(value, tuple) else value
    environ["RNNTUNE_API_URL"] = api
    return environ


def limit_of(container: dict[str, Any]) -> float:
    return quantity_bytes(container["resources"]["limits"]["memory"])


@pytest.mark.slow
def test_every_command_that_is_not_a_ray_node_fits_its_memory_limit(tmp_path: Path) -> None:
    found = containers(render())
    image = found["api"]["image"]  # rnntune's; PostgreSQL's pod runs its own image
    measured = {name for name, c in found.items() if c["image"] == image and c["args"][0] not in RAY_ROLES}
    assert measured == {"api", "sweep"}, f"measure the new command(s) here: {measured}"
    settings = example_settings()
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    tokens = {name: settings[name] for name in ("RNNTUNE_API_TOKEN", "RNNTUNE_API_READ_TOKEN")}
    with measured_serve(tmp_path, {**base, **tokens}) as (api, serve_report):
        job_report = tmp_path / "job.peak"
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, str(job_report), *job_command(found["sweep"])],
            env=job_environ(found["sweep"], api, base),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0 and "created study" in done.stdout, done.stdout + done.stderr
        reads = {"Authorization": f"Bearer {tokens['RNNTUNE_API_READ_TOKEN']}"}
        for path in ("/studies", f"/studies/{settings['RNNTUNE_STUDY']}", "/web/"):
            httpx.get(api + path, headers=reads, timeout=60).raise_for_status()
    peaks = {"sweep": peak_bytes(job_report), "api": peak_bytes(serve_report)}
    for name, peak in peaks.items():
        limit = limit_of(found[name])
        print(
            f"{name}: peak RSS {peak / MIB:.0f} MiB; limit {found[name]['resources']['limits']['memory']} "
            f"({limit / MIB:.0f} MiB, {limit / peak:.1f}x)"
        )
    short = {n: p for n, p in peaks.items() if limit_of(found[n]) < HEADROOM * p}
    assert not short, {n: f"needs >= {HEADROOM * p / MIB:.0f} MiB" for n, p in short.items()}
