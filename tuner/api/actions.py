"""Starting and stopping a study's sweep: the rules shared by the REST routes and `rnntune up`."""

from __future__ import annotations

import time

from tuner.api.checkpoint import storage_root
from tuner.api.errors import Conflict
from tuner.api.launcher import SweepHandle
from tuner.api.state import LIVE_STATUSES, ApiState
from tuner.study import HEARTBEAT_STALE_S


def driven_elsewhere(attrs: dict) -> bool:
    """Whether another process's sweep heartbeat on this study is fresh (tuner.study's rule)."""
    driver = attrs.get("driver")
    if not isinstance(driver, dict):
        return False
    try:
        age = time.time() - float(driver.get("heartbeat", 0))
    except (TypeError, ValueError):
        return False
    return age < HEARTBEAT_STALE_S


def start(state: ApiState, name: str) -> SweepHandle:
    """Launch `rnntune sweep --resume NAME` for the study; Conflict (409) when that makes no sense:
    this server's sweep still runs, another live process drives it, or it is finished."""
    row = state.store.row(name)
    if state.launcher.is_running(name):
        raise Conflict(f"study {name!r} is already running")
    if row.status in LIVE_STATUSES and driven_elsewhere(row.user_attrs):
        raise Conflict(
            f"study {name!r} has status {row.status!r} and a live sweep process elsewhere "
            f"(fresh heartbeat); stop that sweep first"
        )
    if row.status == "finished":
        raise Conflict(f"study {name!r} is finished: all its trials have run")
    handle = state.launcher.start(name, storage_root(row.user_attrs, state.settings.storage_root / name))
    state.store.invalidate(name)
    return handle


def stop(state: ApiState, name: str) -> SweepHandle:
    """Ask this server's sweep of the study to stop cleanly; Conflict (409) if none runs."""
    state.store.row(name)
    handle = state.launcher.stop(name)
    if handle is None:
        raise Conflict(f"study {name!r} has no sweep running in this server; nothing to stop")
    state.store.invalidate(name)
    return handle
