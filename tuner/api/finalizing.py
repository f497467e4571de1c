"""Runs `rnntune finalize NAME` as a subprocess for POST /studies/{name}/finalize, one per study.

Like a sweep, a finalize run (Ray, S×K trainings) is heavy and may crash, so it runs in its own
process and session; the database URL goes in $RNNTUNE_DB_URL, never on the command line. When
the child exits while the study's `finalize_status` still says `running` for it, a watcher thread
records `failed`, so the status never lies about a dead run. Finished reruns are already stored.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from tuner.api.errors import Conflict
from tuner.api.sweeps import LaunchFailed, spawn_logged, sweep_env
from tuner.finalize import STATUS_ATTR, live_run, set_status
from tuner.study import load_study

log = logging.getLogger("rnntune.api")


@dataclass
class FinalizeHandle:
    name: str
    process: subprocess.Popen
    log: Path

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


class FinalizeLauncher:
    """Starts and tracks one `rnntune finalize` subprocess per study."""

    def __init__(self, db_url: str, python: str = sys.executable) -> None:
        self.db_url = db_url
        self._python = python
        self._handles: dict[str, FinalizeHandle] = {}
        self._lock = threading.Lock()

    def command(self, name: str, top: int, seeds: int, parallel: int, storage_path: Path) -> list[str]:
        return [
            self._python,
            "-m",
            "tuner.cli",
            "finalize",
            name,
            "--top",
            str(top),
            "--seeds",
            str(seeds),
            "--parallel",
            str(parallel),
            "--storage",
            str(storage_path),
        ]

    def get(self, name: str) -> FinalizeHandle | None:
        with self._lock:
            return self._handles.get(name)

    def start(
        self, name: str, attrs: dict, *, top: int, seeds: int, parallel: int, storage_path: Path
    ) -> FinalizeHandle:
        """Launch the run; Conflict (409) while this server's or another local process's run goes on."""
        with self._lock:
            current = self._handles.get(name)
            if (current is not None and current.running) or live_run(attrs) is not None:
                raise Conflict(f"study {name!r} already has a finalize run in progress")
            # Until the child records `running`, the study says the run is queued (not an old `finished`).
            load_study(name, self.db_url).set_user_attr(
                STATUS_ATTR, {"state": "queued", "top": top, "seeds": seeds}
            )
            log_path = storage_path / "finalize.log"
            try:  # the sweep's allow-listed environment: no token reaches the reruns' Ray processes
                process = spawn_logged(
                    self.command(name, top, seeds, parallel, storage_path),
                    log_path,
                    sweep_env(self.db_url, None),
                )
            except OSError as err:
                raise LaunchFailed(f"cannot start the finalize run of {name!r}: {err}") from err
            handle = FinalizeHandle(name=name, process=process, log=log_path)
            self._handles[name] = handle
        threading.Thread(target=self._watch, args=(handle,), daemon=True, name=f"finalize-{name}").start()
        return handle

    def _watch(self, handle: FinalizeHandle) -> None:
        code = handle.process.wait()
        try:
            study = load_study(handle.name, self.db_url)
            status = study.user_attrs.get(STATUS_ATTR) or {}
            if status.get("state") in ("queued", "running") and status.get("pid") in (
                None,
                handle.process.pid,
            ):
                set_status(study, "failed", error=f"finalize process exited with {code}; see {handle.log}")
        except Exception:  # the watcher must never die silently; the API keeps serving regardless
            log.exception("recording the end of the finalize run of %s failed", handle.name)
