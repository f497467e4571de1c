"""A store emulator the tests start as a process on loopback (fake-gcs-server, Azurite): its log in
a file (a pipe nobody reads would block it once full), ready when its own client's probe answers,
stopped at the end."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def emulator(
    name: str, command: list[str], log: Path, probe: Callable[[], bool], cwd: Path | None = None
) -> Iterator[subprocess.Popen]:
    """Run `command` until the context ends, entering once `probe()` is true (RuntimeError with the
    log's tail when the process exits or 30 s pass first)."""
    with open(log, "wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=cwd)
    try:
        deadline = time.monotonic() + 30
        while not _answers(probe):
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited ({process.returncode}): {log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not answer within 30 s: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=10)


def _answers(probe: Callable[[], bool]) -> bool:
    try:
        return probe()
    except OSError:  # not listening yet (urllib's URLError and pyarrow's errors are OSErrors)
        return False
