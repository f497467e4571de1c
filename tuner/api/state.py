"""What the app holds for its lifetime: settings, the study store and the sweep launcher."""

from __future__ import annotations

import logging

from tuner.api import sweeps
from tuner.api.reads import StudyStore
from tuner.api.settings import ApiSettings
from tuner.lease import lease_engine

log = logging.getLogger("rnntune.api")


class ApiState:
    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings
        self.store = StudyStore(settings.db_url)
        self.leases = lease_engine(settings.db_url)
        self.launcher = sweeps.SweepLauncher(
            settings.db_url,
            settings.storage_root,
            on_exit=lambda name, code, stopped: sweeps.record_exit(self, name, code, stopped),
        )

    def close(self) -> None:
        self.launcher.shutdown(self.leases)
        self.store.close()
        self.leases.dispose()
