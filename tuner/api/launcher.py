"""Runs study sweeps as subprocesses of `rnntune sweep --resume NAME` and stops them with SIGINT.

Why a subprocess: a sweep (Ray, trainers, the sampler) is heavy and may crash; in its own process
the API stays responsive and survives it. Each child gets its own session so a Ctrl-C meant for the
server reaches the sweep only through `stop`/`shutdown`, which ask it to stop cleanly (SIGINT:
running trials end, completed ones stay) and escalate to SIGTERM and SIGKILL only after a timeout.
When a child exits while the study still says `running`/`stopping`, a watcher thread records
`stopped` (clean exit) or `failed` (anything else) so the status never lies about a dead sweep.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tuner
from tuner.study import DB_ENV

log = logging.getLogger("rnntune.api")

_PACKAGE_ROOT = str(Path(tuner.__file__).resolve().parent.parent)


class SweepAlreadyRunning(RuntimeError):
    """The study already has a live sweep process."""


class LaunchFailed(RuntimeError):
    """The sweep process could not be started (storage folder or executable unusable)."""


@dataclass
class SweepHandle:
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


class SweepLauncher:
    """Starts, tracks and stops one sweep subprocess per study."""

    def __init__(
        self,
        db_url: str,
        on_exit: Callable[[str, int, bool], None],
        python: str = sys.executable,
    ) -> None:
        """`on_exit(name, returncode, stop_requested)` runs in a watcher thread when a sweep ends."""
        self.db_url = db_url
        self._on_exit = on_exit
        self._python = python
        self._handles: dict[str, SweepHandle] = {}
        self._lock = threading.Lock()

    def command(self, name: str, storage_path: Path) -> list[str]:
        """The sweep's command line; the database URL goes in $RNNTUNE_DB_URL instead of `--db`
        so a password in it never shows in a process list."""
        return [self._python, "-m", "tuner.cli", "sweep", "--resume", name, "--storage", str(storage_path)]

    def start(self, name: str, storage_path: Path) -> SweepHandle:
        """Launch the study's sweep; SweepAlreadyRunning if this launcher's sweep still runs."""
        with self._lock:
            current = self._handles.get(name)
            if current is not None and current.running:
                raise SweepAlreadyRunning(f"study {name!r} already has a running sweep (pid {current.process.pid})")
            log = storage_path / "sweep.log"
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
            env["PYTHONUNBUFFERED"] = "1"
            env[DB_ENV] = self.db_url
            try:
                storage_path.mkdir(parents=True, exist_ok=True)
                with log.open("ab") as out:
                    process = subprocess.Popen(
                        self.command(name, storage_path),
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                    )
            except OSError as err:
                raise LaunchFailed(f"cannot start the sweep of {name!r}: {err}") from err
            handle = SweepHandle(name=name, process=process, log=log)
            self._handles[name] = handle
        threading.Thread(target=self._watch, args=(handle,), daemon=True, name=f"sweep-{name}").start()
        return handle

    def _watch(self, handle: SweepHandle) -> None:
        code = handle.process.wait()
        try:
            self._on_exit(handle.name, code, handle.stop_requested)
        except Exception:  # the watcher must never die silently; the API keeps serving regardless
            log.exception("recording the end of the sweep of %s failed", handle.name)

    def get(self, name: str) -> SweepHandle | None:
        with self._lock:
            return self._handles.get(name)

    def is_running(self, name: str) -> bool:
        handle = self.get(name)
        return handle is not None and handle.running

    def stop(self, name: str) -> SweepHandle | None:
        """Ask the study's sweep to stop (SIGINT) and return at once; None if none is running."""
        handle = self.get(name)
        if handle is None or not handle.running:
            return None
        handle.stop_requested = True
        try:
            handle.process.send_signal(signal.SIGINT)
        except ProcessLookupError:
            pass
        return handle

    def shutdown(self, timeout_s: float = 60.0) -> None:
        """Stop every running sweep, waiting up to `timeout_s` for each before escalating."""
        with self._lock:
            handles = [h for h in self._handles.values() if h.running]
        for handle in handles:
            self.stop(handle.name)
        for handle in handles:
            for sig, wait_s in ((None, timeout_s), (signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
                if sig is not None and handle.running:
                    handle.process.send_signal(sig)
                try:
                    handle.process.wait(timeout=wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
