"""Runs `rnntune finalize NAME` as a child process for POST /studies/{name}/finalize, one per study.

Like a sweep, a finalize run (Ray, S×K trainings) is heavy and may crash, so it runs through the
process launcher (`tuner.sweeps.launch.launcher`): its own session, no token, the database URL in the
environment. When the child exits while the study's `finalize_status` still says `queued` or
`running` for it, the launcher's watcher records `failed`, so the status never lies about a dead
run. Finished reruns are already stored. A study kept in an object store is finalized with
`--storage s3://...` (its reruns uploaded there), its log in the server's local folder for it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tuner.errors import Conflict
from tuner.storage import study_attrs
from tuner.storage.object_store import ObjectLocation
from tuner.storage.study import load_study
from tuner.sweeps.finalize.rerun import live_run, set_finalize_status
from tuner.sweeps.launch.launcher import Handle, Launcher


class FinalizeLauncher:
    """Starts and tracks one `rnntune finalize` child per study."""

    def __init__(self, db_url: str, python: str = sys.executable) -> None:
        self.db_url = db_url
        self._launcher = Launcher(db_url, on_exit=self._record_exit, python=python)

    @staticmethod
    def command(
        name: str, top: int, seeds: int, parallel: int, storage_path: Path | ObjectLocation
    ) -> list[str]:
        """The `rnntune` arguments of the run."""
        return [
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

    def get(self, name: str) -> Handle | None:
        return self._launcher.get(name)

    def live(self) -> list[Handle]:
        """The finalize runs this launcher started that still run."""
        return self._launcher.live()

    def start(
        self,
        name: str,
        attrs: dict,
        *,
        top: int,
        seeds: int,
        parallel: int,
        storage_path: Path | ObjectLocation,
        log_folder: Path,
    ) -> Handle:
        """Launch the run, its log `log_folder/finalize.log`; Conflict (409) while this server's or
        another local process's run goes on."""
        with self._launcher.lock:
            if self._launcher.running(name) is not None or live_run(attrs) is not None:
                raise Conflict(f"study {name!r} already has a finalize run in progress")
            # Until the child records `running`, the study says the run is queued (not an old `finished`).
            study_attrs.FINALIZE_STATUS.write(
                load_study(name, self.db_url),
                {"state": "queued", "top": top, "seeds": seeds},
            )
            return self._launcher.start(
                name, self.command(name, top, seeds, parallel, storage_path), log_folder / "finalize.log"
            )

    def _record_exit(self, handle: Handle, code: int) -> None:
        study = load_study(handle.name, self.db_url)
        status = study_attrs.FINALIZE_STATUS.of(study.user_attrs) or {}
        if status.get("state") in ("queued", "running") and status.get("pid") in (None, handle.process.pid):
            set_finalize_status(
                study, "failed", error=f"finalize process exited with {code}; see {handle.log}"
            )
