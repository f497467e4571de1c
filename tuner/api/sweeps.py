"""Creating studies and starting and stopping their sweeps: the rules shared by the REST routes and
`rnntune up`. Raises domain errors (`InvalidStudy`, `SweepConflict`, `LaunchFailed`); the routes map
them to HTTP (`tuner.api.errors`).

Who drives a study is the driver lease in the study's database (`tuner.lease`), not this process:
* start: refused while a driver holds a live lease; otherwise registers a new start and launches
  `rnntune sweep --resume NAME` as a subprocess in its own session (the API survives a crashing
  sweep, the sweep survives a restarting API).
* stop: a request stored in the lease row; whichever process drives the study sees it within about
  a second and stops cleanly, so any API instance can stop any sweep, and a stop during start-up
  is kept. For a sweep this API launched, a driver still alive `STOP_TIMEOUT_S` later gets SIGTERM,
  then SIGKILL `KILL_AFTER_S` after that.
* status: from the lease. A live lease says `running` (`stopping` once a stop is stored); a study
  whose stored status says running but whose lease expired lost its driver, and reads `failed`.
  After an API restart the sweeps it launched are adopted the same way: their leases are live.
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
from typing import Any

import tuner
from tuner.api.models import CreateStudy
from tuner.early_stopping import EarlyStopping
from tuner.lease import Lease, begin, read, request_stop
from tuner.space import list_spaces
from tuner.study import DB_ENV, GENERATION_ENV, SECRET_ENV, StudyExistsError, create_study
from tuner.study_stop import StudyStop

log = logging.getLogger("rnntune.api")

_PACKAGE_ROOT = str(Path(tuner.__file__).resolve().parent.parent)
# A launched sweep asked to stop gets SIGTERM if still alive after this long, SIGKILL after KILL_AFTER_S more.
STOP_TIMEOUT_S = 120.0
KILL_AFTER_S = 15.0
LIVE_STATUSES = ("running", "stopping")
# The only environment a sweep gets from the API (plus its database URL): no token, nothing else.
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
_ENV_PREFIXES = ("LC_", "RAY_", "CUDA_", "NVIDIA_", "OMP_", "MKL_", "TORCH_", "PYTHON", "RNNTUNE_")


class InvalidStudy(ValueError):
    """A study request that names a bad field or value (the message names it and what is allowed)."""


class SweepConflict(RuntimeError):
    """The action conflicts with the study's state (already driven, finished, nothing to stop)."""


class LaunchFailed(RuntimeError):
    """The sweep process could not be started (log folder or executable unusable)."""


@dataclass
class SweepHandle:
    """A sweep process this API launched."""

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


def sweep_env(db_url: str, generation: int | None) -> dict[str, str]:
    """The environment of a process the API launches (a sweep, a finalize run): the allow-listed
    variables, never a token; the database URL in $RNNTUNE_DB_URL (not argv, so a password never
    shows in a process list), which the process removes from its environment before Ray starts."""
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


def spawn_logged(argv: list[str], log_file: Path, env: dict[str, str]) -> subprocess.Popen:
    """Start `argv` in its own session (a restart of the API does not kill it), output appended to
    `log_file`; OSError if it cannot start."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def log_path(log_root: Path, name: str) -> Path:
    """The sweep's log under the server's own storage root: a file name made from the study name
    (which comes from the database) with anything but [A-Za-z0-9._-] replaced, plus a hash of it."""
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80].lstrip(".") or "study"
    return log_root / "sweep-logs" / f"{slug}-{hashlib.sha256(name.encode()).hexdigest()[:10]}.log"


class SweepLauncher:
    """Starts sweep subprocesses, watches them exit, and escalates a stop that is not obeyed."""

    def __init__(
        self,
        db_url: str,
        log_root: Path,
        on_exit: Callable[[str, int, bool], None],
        python: str = sys.executable,
    ) -> None:
        """`on_exit(name, returncode, stop_requested)` runs in a watcher thread when a sweep ends."""
        self.db_url = db_url
        self._log_root = log_root
        self._on_exit = on_exit
        self._python = python
        self._handles: dict[str, SweepHandle] = {}
        self.lock = threading.Lock()

    def start(self, name: str, generation: int) -> SweepHandle:
        log_file = log_path(self._log_root, name)
        try:
            process = spawn_logged(
                [self._python, "-m", "tuner.cli", "sweep", "--resume", name],
                log_file,
                sweep_env(self.db_url, generation),
            )
        except OSError as err:
            raise LaunchFailed(f"cannot start the sweep of {name!r}: {err}") from err
        handle = SweepHandle(name=name, process=process, log=log_file)
        self._handles[name] = handle
        threading.Thread(target=self._watch, args=(handle,), daemon=True, name=f"sweep-{name[:40]}").start()
        return handle

    def _watch(self, handle: SweepHandle) -> None:
        code = handle.process.wait()
        try:
            self._on_exit(handle.name, code, handle.stop_requested)
        except Exception:  # the watcher must never die silently; the API keeps serving regardless
            log.exception("recording the end of the sweep of %s failed", handle.name)

    def get(self, name: str) -> SweepHandle | None:
        return self._handles.get(name)

    def running(self, name: str) -> SweepHandle | None:
        handle = self._handles.get(name)
        return handle if handle is not None and handle.running else None

    def escalate(self, handle: SweepHandle, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """In the background: SIGTERM the sweep if it is alive `timeout_s` after the stop request,
        SIGKILL it `KILL_AFTER_S` later."""
        handle.stop_requested = True
        threading.Thread(target=terminate_after, args=(handle, timeout_s), daemon=True).start()

    def shutdown(self, engine: Any, timeout_s: float = 60.0) -> None:
        """Stop every sweep this API launched and still runs: a stored stop, then escalation."""
        handles = [h for h in list(self._handles.values()) if h.running]
        for handle in handles:
            request_stop(engine, handle.name, "the API that launched the sweep shut down")
            handle.stop_requested = True
        for handle in handles:
            terminate_after(handle, timeout_s)


def terminate_after(handle: SweepHandle, timeout_s: float) -> None:
    """Wait up to `timeout_s` for the sweep to exit, then SIGTERM it, then SIGKILL it
    `KILL_AFTER_S` later; returns once it has exited (or SIGKILL was sent and waited on)."""
    for sig, wait_s in ((None, timeout_s), (signal.SIGTERM, KILL_AFTER_S), (signal.SIGKILL, KILL_AFTER_S)):
        if sig is not None and handle.running:
            log.warning("sweep of %s ignored its stop request; sending %s", handle.name, sig.name)
            try:
                handle.process.send_signal(sig)
            except ProcessLookupError:
                return
        try:
            handle.process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def study_status(stored: str, lease: Lease | None, handle: SweepHandle | None) -> str:
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


def _space(raw: str | dict) -> str | dict:
    """The space as given, once a name is known to be one of the listed spaces (`create_study`
    validates it, with the overrides, once)."""
    if isinstance(raw, dict):
        return raw
    known = list_spaces()
    if raw not in known:
        raise InvalidStudy(f"body.space: unknown search space {raw!r}; known: {', '.join(known) or 'none'}")
    return raw


def create(state: Any, body: CreateStudy) -> None:
    """Create the study in the API's database with its checkpoints under `<storage>/<name>`.

    A name already taken is a SweepConflict; a space, range override or setting that the space
    module rejects is InvalidStudy carrying its message (which names the field and allowed values).
    """
    if state.store.db.study_row(body.name) is not None:
        raise SweepConflict(f"a study named {body.name!r} already exists")
    space = _space(body.space)
    overrides = body.overrides.model_dump()
    try:
        create_study(
            body.name,
            storage_url=state.settings.db_url,
            space=space,
            sampler=body.sampler,
            n_trials=body.n_trials,
            parallel=body.parallel,
            scheduler=body.scheduler,
            storage_path=str(state.settings.storage_root / body.name),
            overrides=overrides if overrides["ranges"] or overrides["set"] else None,
            seed=body.seed,
            early_stopping={name: getattr(body, name) for name in EarlyStopping.model_fields},
            study_stop={rule: getattr(body, rule) for rule in StudyStop.model_fields},
            keep_top=body.keep_top,
            warm_start=body.warm_start,
        )
    except StudyExistsError as err:
        raise SweepConflict(str(err)) from err
    except (ValueError, TypeError, KeyError) as err:
        raise InvalidStudy(f"body: {err}") from err
    finally:
        state.store.invalidate(body.name)


def start(state: Any, name: str) -> SweepHandle:
    """Launch the study's sweep; SweepConflict when a driver holds its lease, this API's sweep of
    it still runs, or it is finished."""
    row = state.store.row(name)
    with state.launcher.lock:
        if (current := state.launcher.running(name)) is not None:
            raise SweepConflict(f"study {name!r} is already running (pid {current.process.pid})")
        lease = read(state.leases, name)
        if lease is not None and lease.state() == "live":
            raise SweepConflict(f"study {name!r} is driven by {lease.describe()}; stop that sweep first")
        if row.status == "finished":
            raise SweepConflict(f"study {name!r} is finished: all its trials have run")
        handle = state.launcher.start(name, begin(state.leases, name))
    state.store.invalidate(name)
    return handle


def stop(state: Any, name: str) -> tuple[SweepHandle | None, Lease]:
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


def record_exit(state: Any, name: str, returncode: int, stop_requested: bool) -> None:
    """Record how a sweep this API launched ended when the sweep could not record it itself
    (it died, or failed before it held the lease), unless another driver holds the lease."""
    log.info("sweep of %s exited with %s", name, returncode)
    state.store.invalidate(name)
    row = state.store.db.study_row(name)
    lease = read(state.leases, name)
    if (
        row is None
        or row.status not in (*LIVE_STATUSES, "created")
        or (lease is not None and lease.state() == "live")
    ):
        return
    if stop_requested:
        status = "stopped"
    elif returncode == 0:
        status = "finished" if row.status != "created" else "stopped"
    else:
        status = "failed"
    state.store.storage.set_study_user_attr(row.study_id, "status", status)
    state.store.invalidate(name)
