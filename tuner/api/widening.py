"""Widening a study's range through the API (`POST /studies/{name}/widen`), the REST side of
`rnntune sweep --resume NAME --widen PARAM`: refused while a sweep drives the study, then the
stored space widened (`tuner.widen`) and, if asked, the trial count raised so that the start action
continues the study in the wider range.
"""

from __future__ import annotations

from typing import Any

import optuna

from tuner.api.models import WidenRange
from tuner.api.sweeps import InvalidStudy, SweepConflict
from tuner.lease import read
from tuner.space import SpaceError
from tuner.study import StudyError, set_status
from tuner.widen import widen_study


def widen(state: Any, name: str, body: WidenRange) -> dict[str, Any]:
    """Widen the study's range; SweepConflict while a driver holds its lease or this API's sweep of
    it runs, InvalidStudy naming `body.param` or `body.edge` for a range that cannot widen."""
    state.store.row(name)
    with state.launcher.lock:
        if (current := state.launcher.running(name)) is not None:
            raise SweepConflict(
                f"study {name!r} is running (pid {current.process.pid}); stop it to widen a range"
            )
        lease = read(state.leases, name)
        if lease is not None and lease.state() == "live":
            raise SweepConflict(
                f"study {name!r} is driven by {lease.describe()}; stop that sweep to widen a range"
            )
        study = optuna.load_study(study_name=name, storage=state.store.storage)
        space = study.user_attrs.get("space_def")
        if not isinstance(space, dict) or not isinstance(space.get("params"), dict):
            raise InvalidStudy(f"study {name!r} was not created by rnntune: it has no stored space to widen")
        spec = space["params"].get(body.param)
        # Not a tuned range: the param is wrong; otherwise the edge is (none alerted, or at a limit).
        field = (
            "body.param" if not isinstance(spec, dict) or spec.get("scale") == "categorical" else "body.edge"
        )
        try:
            change = widen_study(study, body.param, body.edge)
        except (SpaceError, StudyError) as err:
            raise InvalidStudy(f"{field}: {err}") from err
        finally:
            state.store.invalidate(name)
        n_trials = int(study.user_attrs.get("n_trials") or 0) + body.add_trials
        if body.add_trials:
            study.set_user_attr("n_trials", n_trials)
            if study.user_attrs.get("status") == "finished":
                set_status(study, "stopped")  # trials left to run: the start action continues it
        state.store.invalidate(name)
    return {"name": name, "change": change, "n_trials": n_trials, "status": study.user_attrs["status"]}
