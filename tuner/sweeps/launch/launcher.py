"""One process launcher for the API's long-running children: sweeps (`rnntune sweep --resume NAME`)
and finalize runs (`rnntune finalize NAME`).

A child runs in its own session (the API survives a crashing child, the child survives a
restarting API), with an allow-listed environment that never holds a token; the database URL goes
in $RNNTUNE_DB_URL, never on the command line. A watcher thread calls `on_exit` when it ends, and
a stop that is not obeyed escalates to SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tuner
from tuner.errors import LaunchFailed
from tuner.storage.database_url import DB_ENV
from tuner.storage.object_backends import BACKENDS
from tuner.storage.study import GENERATION_ENV, SECRET_ENV

log = logging.getLogger("rnntune.api")

_PACKAGE_ROOT = str(Path(tuner.__file__).resolve().parent.parent)
# A child asked to stop gets SIGTERM if still alive after this long, SIGKILL after KILL_AFTER_S more.
STOP_TIMEOUT_S = 120.0
KILL_AFTER_S = 15.0
# The only environment a child gets from the API (plus its database URL): no API token, nothing else.
# MLFLOW_* carries the tracking server's credentials and settings (docs/trackers.md) to the sweep;
# each object store's endpoint and credentials (AWS_* for S3, GOOGLE_* and STORAGE_EMULATOR_HOST for
# GCS, AZURE_* for Azure: object_backends.py), which a sweep or finalize run of a study kept there
# (`--storage s3://...`) needs to write its checkpoints (docs/cluster.md).
_ENV_NAMES = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "TZ",
    "TMPDIR",
    "SHELL",
    "VIRTUAL_ENV",
    "LD_LIBRARY_PATH",
)
_ENV_PREFIXES = (
    "LC_",
    "RAY_",
    "CUDA_",
    "NVIDIA_",
    "OMP_",
    "MKL_",
    "TORCH_",
    "PYTHON",
    "RNNTUNE_",
    "MLFLOW_",
    *(prefix for backend in BACKENDS.values() for prefix in backend.env_prefixes),
)


@dataclass
class Handle:
    """A child process this API launched."""

    name: str
    process: subprocess.Popen
    log: Path
    stop_requested: bool = False

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def as_dict(self) -> dict:
        return {
            "pid": self.process.pid,
            "running": self.running,
            "returncode": self.process.returncode,
            "log": str(self.log),
        }


def child_env(db_url: str, generation: int | None) -> dict[str, str]:
    """The environment of a process the API launches: the allow-listed variables, never a token;
    the database URL in $RNNTUNE_DB_URL (not argv, so a password never shows in a process list),
    which the process removes from its environment before Ray starts."""
    env = {
        k: v
        for k, v in os.environ.items()
        if (k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)) and k not in SECRET_ENV
    }
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env[DB_ENV] = db_url
    if generation is not None:
        env[GENERATION_ENV] = str(generation)
    return env


def log_path(log_root: Path, name: str) -> Path:
    """The sweep's log under the server's own storage root: a file name made from the study name
    (which comes from the database) with anything but [A-Za-z0-9._-] replaced, plus a hash of it."""
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80].lstrip(".") or "study"
    return log_root / "sweep-logs" / f"{slug}-{hashlib.sha256(name.encode()).hexdigest()[:10]}.log"


class Launcher:
    """Starts `rnntune` subcommands as children, one per study, and watches them exit."""

    def __init__(
        self,
        db_url: str,
        on_exit: Callable[[Handle, int], None],
        python: str = sys.executable,
    ) -> None:
        """`on_exit(handle, returncode)` runs in a watcher thread when a child ends."""
        self.db_url = db_url
        self._on_exit = on_exit
        self._python = python
        self._handles: dict[str, Handle] = {}
        self.lock = threading.RLock()

    def start(self, name: str, args: list[str], log_file: Path, generation: int | None = None) -> Handle:
        """Run `rnntune ARGS` for study `name`, output appended to `log_file`; LaunchFailed if it
        cannot start."""
        log_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            with log_file.open("ab") as out:
                process = subprocess.Popen(
                    [self._python, "-m", "tuner.cli", *args],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=child_env(self.db_url, generation),
                    start_new_session=True,
                )
        except OSError as err:
            raise LaunchFailed(f"cannot start `rnntune {args[0]}` for {name!r}: {err}") from err
        handle = Handle(name=name, process=process, log=log_file)
        with self.lock:
            self._handles[name] = handle
        threading.Thread(
            target=self._watch, args=(handle,), daemon=True, name=f"{args[0]}-{name[:40]}"
        ).start()
        return handle

    def _watch(self, handle: Handle) -> None:
        code = handle.process.wait()
        try:
            self._on_exit(handle, code)
        except Exception:  # the watcher must never die silently; the API keeps serving regardless
            log.exception("recording the end of %s's process failed", handle.name)

    def get(self, name: str) -> Handle | None:
        return self._handles.get(name)

    def running(self, name: str) -> Handle | None:
        handle = self._handles.get(name)
        return handle if handle is not None and handle.running else None

    def escalate(self, handle: Handle, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """In the background: SIGTERM the child if it is alive `timeout_s` after the stop request,
        SIGKILL it `KILL_AFTER_S` later."""
        handle.stop_requested = True
        threading.Thread(target=terminate_after, args=(handle, timeout_s), daemon=True).start()

    def live(self) -> list[Handle]:
        return [h for h in list(self._handles.values()) if h.running]


def terminate_after(handle: Handle, timeout_s: float) -> None:
    """Wait up to `timeout_s` for the child to exit, then SIGTERM it, then SIGKILL it
    `KILL_AFTER_S` later; returns once it has exited (or SIGKILL was sent and waited on)."""
    for sig, wait_s in ((None, timeout_s), (signal.SIGTERM, KILL_AFTER_S), (signal.SIGKILL, KILL_AFTER_S)):
        if sig is not None and handle.running:
            log.warning("%s ignored its stop request; sending %s", handle.name, sig.name)
            try:
                signal_group(handle.process, sig)
            except ProcessLookupError:
                return
        try:
            handle.process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def signal_group(process: subprocess.Popen, sig: signal.Signals) -> None:
    """`sig` to the child's whole process group when it leads one (every child is started in its
    own session), so what it started (an in-process Ray cluster's raylet and workers, which hold
    GPUs) goes with it; to the child alone otherwise."""
    if os.getpgid(process.pid) == process.pid:  # ProcessLookupError once it is gone
        os.killpg(process.pid, sig)
    else:
        process.send_signal(sig)
