"""`rnntune up` as a user runs it: serves, runs the default sweep, prints the URL, keeps serving after
the sweep, and quits cleanly on Ctrl-C (SIGINT)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.postgres import free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]


def test_up_serves_the_sweep_and_keeps_serving_until_ctrl_c(tmp_path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tuner.cli",
            "up",
            "--port",
            str(port),
            "--budget",  # the embedded default's 24 trials, cut by a step budget the first trials spend
            "0.1",
            "--set",  # and shortened: what it proves needs no longer trials
            "max_steps=50",
            "--set",
            "eval_batch_size=64",
            "--name",
            "up-run",
            "--db",
            f"sqlite:///{tmp_path / 's.db'}",
            "--storage",
            str(tmp_path / "storage"),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not any("sweep ended" in line for line in lines):
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        output = "".join(lines)
        url = re.search(r"open (http://\S+)", output)
        assert url and url.group(1) == f"http://127.0.0.1:{port}/web/studies/up-run", output
        assert "sweep ended (finished, exit 0)" in output, output
        page = httpx.get(url.group(1))
        assert page.status_code == 200 and "plotly.min.js" in page.text
        study = httpx.get(f"http://127.0.0.1:{port}/studies/up-run").json()
        assert study["status"] == "finished" and study["counts"]["COMPLETE"] + study["counts"]["PRUNED"] == 2
        assert study["space"] == "tiny" and study["n_trials"] == 24
        assert study["user_attrs"]["spec"]["budget"] == 0.1
        assert "(--budget 0.1 × 50 steps)" in study["user_attrs"]["ended_early"]
        plot = httpx.get(f"http://127.0.0.1:{port}/studies/up-run/plots/parallel-coordinates").json()
        assert len(plot["trial_numbers"]) == study["counts"]["COMPLETE"] + study["counts"]["PRUNED"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
