"""Running a Python script in a fresh child process (a Ray cluster or a compile count of its own, an
environment variable its workers must inherit) and reading the one JSON result it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "RESULT "


def fresh_env(**extra: str) -> dict[str, str]:
    """This process's environment without its Ray settings (the child starts a Ray of its own), with
    Ray's token auth off on that loopback cluster, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return {**env, "RAY_AUTH_MODE": "disabled", **extra}


def run_child(script: str, *args: str, env: dict[str, str] | None = None, timeout: float = 600) -> Any:
    """Run `script` with `args` from the repository root; the JSON after its last `RESULT ` line.
    Fails the test with the child's output tails when it exits non-zero or prints no result."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(PREFIX)]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(lines[-1].removeprefix(PREFIX))
