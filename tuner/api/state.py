"""What the app holds for its lifetime: settings, the study store and the process launcher."""

from __future__ import annotations

import logging

from tuner.analysis.reads import StudyStore
from tuner.api.settings import ApiSettings
from tuner.storage.lease import lease_engine, request_stop
from tuner.sweeps.launch import control
from tuner.sweeps.launch.launcher import Launcher, terminate_after

log = logging.getLogger("rnntune.api")


class ApiState:
    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings
        self.store = StudyStore(settings.db_url)
        self.leases = lease_engine(settings.db_url)
        self.launcher = Launcher(
            settings.db_url,
            on_exit=lambda handle, code: control.record_exit(self, handle.name, code, handle.stop_requested),
        )

    def close(self, timeout_s: float = 60.0) -> None:
        """Stop every sweep this API launched and still runs (a stored stop, then escalation)."""
        handles = self.launcher.live()
        for handle in handles:
            request_stop(self.leases, handle.name, "the API that launched the sweep shut down")
            handle.stop_requested = True
        for handle in handles:
            terminate_after(handle, timeout_s)
        self.store.close()
        self.leases.dispose()
