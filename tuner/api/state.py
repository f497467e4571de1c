"""What the app holds for its lifetime: settings, the study store and the sweep launcher."""

from __future__ import annotations

import logging

from tuner.api.launcher import SweepLauncher
from tuner.api.reads import StudyStore
from tuner.api.settings import ApiSettings

log = logging.getLogger("rnntune.api")

# Statuses that mean "a sweep process owns this study"; a dead process must not leave them behind.
LIVE_STATUSES = ("running", "stopping")


class ApiState:
    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings
        self.store = StudyStore(settings.db_url)
        self.launcher = SweepLauncher(settings.db_url, on_exit=self._sweep_exited)

    def _sweep_exited(self, name: str, returncode: int, stop_requested: bool) -> None:
        """Record how a sweep this API launched ended, unless the sweep recorded it itself."""
        log.info("sweep of %s exited with %s", name, returncode)
        self.store.invalidate(name)
        row = self.store.db.study_row(name)
        if row is None or row.status not in (*LIVE_STATUSES, "created"):
            return
        if stop_requested:
            status = "stopped"
        elif returncode == 0:
            status = "finished" if row.status != "created" else "stopped"
        else:
            status = "failed"
        self.store.storage.set_study_user_attr(row.study_id, "status", status)
        self.store.invalidate(name)

    def close(self) -> None:
        self.launcher.shutdown()
        self.store.close()
