"""Running `rnntune sweep` as a separate process, as users and the REST API do, and watching its study."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import optuna
from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS


def tiny_set_args(**extra) -> list[str]:
    args = []
    for key, value in {**TINY_SETTINGS, **extra}.items():
        args += ["--set", f"{key}={value}"]
    return args


def launch(cwd: Path, args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen, Path]:
    """Start `rnntune sweep ARGS` in `cwd`; its output goes to a log file returned beside it."""
    log = cwd / f"sweep-{time.monotonic_ns()}.log"
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "sweep", "--num-cpus", "2", *args],
        cwd=cwd,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env=full_env,
    )
    return proc, log


def trials(db: str, name: str) -> list[optuna.trial.FrozenTrial]:
    try:
        return optuna.load_study(study_name=name, storage=db).get_trials()
    except KeyError:
        return []


def wait_until(predicate: Callable[[], bool], proc: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(
                f"sweep exited ({proc.returncode}) before the condition held:\n{log.read_text()}"
            )
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"condition not met in {timeout} s:\n{log.read_text()}")
        time.sleep(0.5)


def loads_torch(pid: int) -> bool:
    """Whether the live process `pid` has loaded PyTorch: its memory maps name libtorch."""
    return "libtorch" in Path(f"/proc/{pid}/maps").read_text()


def count(ts, state: TrialState) -> int:
    return sum(t.state == state for t in ts)


def finish(proc: subprocess.Popen, log: Path, timeout: float) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"sweep did not finish in {timeout} s:\n{log.read_text()}") from None


def snapshot(ts) -> dict[int, tuple]:
    """What must not change about finished trials across a crash and a resume."""
    return {
        t.number: (t.state, t.value, t.params, t.intermediate_values, t.datetime_complete, t.user_attrs)
        for t in ts
        if t.state in (TrialState.COMPLETE, TrialState.PRUNED)
    }
