"""A real MLflow tracking server for a test: `mlflow server` on a free loopback port, SQLite backend."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.postgres import free_port

START_TIMEOUT_S = 180.0


class MlflowServer:
    """A running `mlflow server`: its URI, and `stop()` to take it down (as a crash would)."""

    def __init__(self, folder: Path) -> None:
        port = free_port()
        self.uri = f"http://127.0.0.1:{port}"
        self.log = folder / "mlflow-server.log"
        mlflow = Path(sys.executable).with_name("mlflow")
        self._proc = subprocess.Popen(
            [
                str(mlflow),
                "server",
                *("--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}"),
                *("--host", "127.0.0.1", "--port", str(port), "--workers", "1"),
            ],
            cwd=folder,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its workers share its process group: `stop` ends them all
            # MLflow 3's job runner (a dozen huey consumers) serves server-side jobs, which the
            # tracker never asks for: without it the server starts in a fraction of the CPU.
            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.uri}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"mlflow server not ready in {START_TIMEOUT_S:g} s:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(30)


@contextmanager
def mlflow_server(folder: Path) -> Iterator[MlflowServer]:
    server = MlflowServer(folder)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()
