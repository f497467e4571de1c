"""Widening a study's range through the API (`POST /studies/{name}/widen`), the REST side of
`rnntune sweep --resume NAME --widen PARAM`: the stored space widened (`tuner.sweeps.widen.ranges`) and,
if asked, the trial count raised so that the start action continues the study in the wider range.

The widen holds the study's driver lease for the length of its write, as a driver does: a sweep
starting at the same moment (from any API instance or the command line) either takes the lease
first, and the widen is refused, or finds it held and is refused (`DriverBusy`) until the widen has
written and given the lease back. No driver ever samples from a space half-way through a widen.
"""

from __future__ import annotations

from typing import Any, Protocol

import optuna

from tuner.errors import InvalidStudy, SweepConflict
from tuner.space import SpaceError
from tuner.spec import SweepSpec
from tuner.storage import study_attrs
from tuner.storage.attrs import set_study_attrs
from tuner.storage.lease import acquire, new_owner, read, release
from tuner.storage.study import StudyError, now
from tuner.sweeps.launch.api_state import ControlState
from tuner.sweeps.widen.ranges import plan_widening


class WidenRequest(Protocol):
    """What to widen (the API's `WidenRange` body): a param, an edge (None: the alerted one), and
    trials to add."""

    @property
    def param(self) -> str: ...
    @property
    def edge(self) -> str | None: ...
    @property
    def add_trials(self) -> int: ...


def widen(state: ControlState, name: str, body: WidenRequest) -> dict[str, Any]:
    """Widen the study's range under its driver lease; SweepConflict while a driver holds the
    lease or this API's sweep of it runs, InvalidStudy naming `body.param` or `body.edge` for a
    range that cannot widen."""
    state.store.row(name)
    with state.launcher.lock:
        if (current := state.launcher.running(name)) is not None:
            raise SweepConflict(
                f"study {name!r} is running (pid {current.process.pid}); stop it to widen a range"
            )
        owner = new_owner()
        if acquire(state.leases, name, owner) is None:
            lease = read(state.leases, name)
            holder = lease.describe() if lease is not None else "another driver"
            raise SweepConflict(f"study {name!r} is driven by {holder}; stop that sweep to widen a range")
        try:
            return _widen(state, name, body)
        finally:
            release(state.leases, name, owner)
            state.store.invalidate(name)


def _widen(state: ControlState, name: str, body: WidenRequest) -> dict[str, Any]:
    """The write itself, run while this API holds the study's lease."""
    study = optuna.load_study(study_name=name, storage=state.store.storage)
    space = study_attrs.SPACE_DEF.of(study.user_attrs)
    if not isinstance(space, dict) or not isinstance(space.get("params"), dict):
        raise InvalidStudy(f"study {name!r} was not created by rnntune: it has no stored space to widen")
    spec = space["params"].get(body.param)
    # Not a tuned range: the param is wrong; otherwise the edge is (none alerted, or at a limit).
    field = "body.param" if not isinstance(spec, dict) or spec.get("scale") == "categorical" else "body.edge"
    try:
        attrs, (change,) = plan_widening(study, [(body.param, body.edge)])
    except (SpaceError, StudyError) as err:
        raise InvalidStudy(f"{field}: {err}") from err
    sweep = SweepSpec.of(study.user_attrs)
    status = study_attrs.STATUS.of(study.user_attrs)
    if body.add_trials:
        sweep = sweep.resume_changes({"n_trials": sweep.n_trials + body.add_trials})
        attrs[study_attrs.SPEC] = sweep.stored()
        if status == "finished":  # trials left to run: the start action continues it
            status = "stopped"
            attrs |= {study_attrs.STATUS: status, study_attrs.STATUS_AT: now()}
    set_study_attrs(state.store.storage, name, attrs)  # all of it or nothing: validated above
    return {
        "name": name,
        "change": change,
        "n_trials": sweep.n_trials,
        "status": status,
    }
