"""Creating studies and starting and stopping their sweeps: the rules shared by the REST routes and
`rnntune up`. Raises domain errors (`InvalidStudy`, `SweepConflict`, `LaunchFailed`); the routes map
them to HTTP (`tuner.api.errors`).

Who drives a study is the driver lease in the study's database (`tuner.storage.lease`), not this process:
* start: refused while a driver holds a live lease; otherwise registers a new start and launches
  `rnntune sweep --resume NAME` through the process launcher (`tuner.sweeps.launch.launcher`).
* stop: a request stored in the lease row; whichever process drives the study sees it within about
  a second and stops cleanly, so any API instance can stop any sweep, and a stop during start-up
  is kept. For a sweep this API launched, a driver still alive `STOP_TIMEOUT_S` later gets SIGTERM,
  then SIGKILL `KILL_AFTER_S` after that.
* status: from the lease. A live lease says `running` (`stopping` once a stop is stored); a study
  whose stored status says running but whose lease expired lost its driver, and reads `failed`.
  After an API restart the sweeps it launched are adopted the same way: their leases are live.
"""

from __future__ import annotations

import logging

from tuner.errors import InvalidInput, InvalidStudy, LaunchFailed, NotFound, SweepConflict
from tuner.space import list_spaces
from tuner.spec import SweepSpec
from tuner.storage import study_attrs
from tuner.storage.confine import study_location
from tuner.storage.lease import Lease, begin, read, request_stop
from tuner.storage.study import StudyExistsError
from tuner.sweeps.cluster.ray_runtime import check_cluster
from tuner.sweeps.launch.api_state import ControlState
from tuner.sweeps.launch.launcher import Handle, log_path
from tuner.sweeps.study.create import create_study

log = logging.getLogger("rnntune.api")

LIVE_STATUSES = ("running", "stopping")
__all__ = ["InvalidStudy", "LaunchFailed", "SweepConflict"]


def study_status(stored: str, lease: Lease | None, handle: Handle | None) -> str:
    """The study's true status: the lease's word for a live driver, `failed` for a stored
    running/stopping whose driver is gone, else the stored status."""
    if lease is not None and lease.state() == "live":
        return "stopping" if lease.stop_requested else "running"
    if handle is not None and handle.running:  # launched, not holding the lease (yet, or any more)
        return (
            "stopping" if handle.stop_requested or (lease is not None and lease.stop_requested) else "running"
        )
    return "failed" if stored in LIVE_STATUSES else stored


def driver_info(lease: Lease | None) -> dict | None:
    """The lease as the API shows it: state (live/expired/stopped), holder and stop request."""
    if lease is None:
        return None
    return {
        "state": lease.state(),
        "host": lease.host,
        "pid": lease.pid,
        "expires_at": lease.expires_at,
        "stop_requested": lease.stop_requested,
    }


def _check_space(raw: str | dict) -> None:
    """InvalidStudy unless a named space is one of the listed spaces (`create_study` validates an
    inline one, with the overrides, once)."""
    if isinstance(raw, dict):
        return
    known = list_spaces()
    if raw not in known:
        raise InvalidStudy(f"body.space: unknown search space {raw!r}; known: {', '.join(known) or 'none'}")


def create(state: ControlState, name: str, spec: SweepSpec) -> None:
    """Create the study `name` from `spec` in the API's database, its checkpoints under `<storage>/<name>`
    (a server whose `--storage` is an object store keeps them there).

    A name already taken is a SweepConflict; a space, range override or setting that the space
    module rejects is InvalidStudy carrying its message (which names the field and allowed values).
    """
    if state.store.find(name) is not None:
        raise SweepConflict(f"a study named {name!r} already exists")
    _check_space(spec.space)
    try:
        create_study(
            name,
            spec,
            storage_url=state.settings.db_url,
            storage_path=(
                state.settings.object_root.child(name).uri
                if state.settings.object_root is not None
                else state.settings.storage_root / name
            ),
            data_roots=state.settings.data_roots,
        )
    except StudyExistsError as err:
        raise SweepConflict(str(err)) from err
    except NotFound as err:  # a study the body refers to; its message would name the database
        raise NotFound(f"body.warm_start: no study named {spec.warm_start!r} in this database") from err
    except InvalidInput as err:
        raise InvalidStudy(f"body: {err}") from err
    finally:
        state.store.invalidate(name)


def start(state: ControlState, name: str) -> Handle:
    """Launch the study's sweep; SweepConflict when a driver holds its lease, this API's sweep of
    it still runs, or it is finished; NotEnoughResources (a Conflict naming the field) when no node of
    the Ray cluster the sweep would join offers one trial's `gpus_per_trial`/`cpus_per_trial`."""
    row = state.store.row(name)
    with state.launcher.lock:
        if (current := state.launcher.running(name)) is not None:
            raise SweepConflict(f"study {name!r} is already running (pid {current.process.pid})")
        lease = read(state.leases, name)
        if lease is not None and lease.state() == "live":
            raise SweepConflict(f"study {name!r} is driven by {lease.describe()}; stop that sweep first")
        if row.status == "finished":
            raise SweepConflict(f"study {name!r} is finished: all its trials have run")
        if (spec := SweepSpec.stored_in(row.user_attrs)) is not None:
            check_cluster({"cpu": spec.cpus_per_trial, "gpu": spec.gpus_per_trial})
        # The folder resolved once, here (a relative stored path from the server's storage root), and
        # handed to the sweep, which would otherwise resolve it from its own working directory.
        settings = state.settings
        folder = study_location(
            study_attrs.STORAGE_PATH.of(row.user_attrs), settings.storage_root, name, settings.object_root
        )
        if folder is None:
            raise SweepConflict(f"study {name!r} keeps its files outside this server's storage root; refused")
        handle = state.launcher.start(
            name,
            ["sweep", "--resume", name, "--storage", str(folder)],
            log_path(state.settings.storage_root, name),
            begin(state.leases, name),
        )
    state.store.invalidate(name)
    return handle


def stop(state: ControlState, name: str) -> tuple[Handle | None, Lease]:
    """Store a stop request for the study's driver (wherever it runs); SweepConflict if none is
    live. A sweep this API launched is escalated to SIGTERM/SIGKILL if it does not obey."""
    state.store.row(name)
    handle = state.launcher.running(name)
    lease = read(state.leases, name)
    if handle is None and (lease is None or lease.state() != "live"):
        held = lease.state() if lease is not None else "never taken"
        raise SweepConflict(f"study {name!r} has no live sweep (driver lease {held}); nothing to stop")
    lease = request_stop(state.leases, name, "stop requested through the API")
    if handle is not None:
        state.launcher.escalate(handle)
    state.store.invalidate(name)
    return handle, lease


def record_exit(state: ControlState, name: str, returncode: int, stop_requested: bool) -> None:
    """Record how a sweep this API launched ended when the sweep could not record it itself
    (it died, or failed before it held the lease), unless another driver holds the lease."""
    log.info("sweep of %s exited with %s", name, returncode)
    state.store.invalidate(name)
    row = state.store.find(name)
    lease = read(state.leases, name)
    if (
        row is None
        or row.status not in (*LIVE_STATUSES, "created")
        or (lease is not None and lease.state() == "live")
    ):
        return
    status: study_attrs.Status
    if stop_requested:
        status = "stopped"
    elif returncode == 0:
        status = "finished" if row.status != "created" else "stopped"
    else:
        status = "failed"
    state.store.storage.set_study_user_attr(
        row.study_id, study_attrs.STATUS, study_attrs.STATUS.checked(status)
    )
    state.store.invalidate(name)
