"""What the sweeps layer needs from the API's state, as Protocols: the API (a higher layer) passes
its `ApiState`, and this layer never imports it or the analysis layer's study store. mypy checks
that `ApiState` satisfies `ControlState` where the routes pass it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import optuna
from sqlalchemy.engine import Engine

from tuner.storage.object_store import ObjectLocation
from tuner.sweeps.launch.launcher import Launcher


class StudyRowView(Protocol):
    """A study's row as the API's store reads it (`tuner.analysis.records.StudyRow`)."""

    @property
    def study_id(self) -> int: ...

    @property
    def user_attrs(self) -> dict[str, Any]: ...

    @property
    def status(self) -> str: ...


class StudyStoreView(Protocol):
    """The API's cached study reads (`tuner.analysis.reads.StudyStore`)."""

    @property
    def storage(self) -> optuna.storages.RDBStorage: ...

    def row(self, name: str) -> StudyRowView: ...

    def find(self, name: str) -> StudyRowView | None: ...

    def invalidate(self, name: str) -> None: ...


class ServerSettings(Protocol):
    """Where the API keeps studies (`tuner.api.settings.ApiSettings`)."""

    @property
    def db_url(self) -> str: ...

    @property
    def storage_root(self) -> Path: ...

    @property
    def data_roots(self) -> tuple[Path, ...]: ...

    @property
    def object_root(self) -> ObjectLocation | None: ...


class ControlState(Protocol):
    """The API's state (`tuner.api.state.ApiState`) as creating, starting, stopping and widening
    studies use it."""

    @property
    def store(self) -> StudyStoreView: ...

    @property
    def settings(self) -> ServerSettings: ...

    @property
    def leases(self) -> Engine: ...

    @property
    def launcher(self) -> Launcher: ...
