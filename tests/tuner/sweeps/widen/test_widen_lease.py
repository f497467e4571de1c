"""REST widen takes the driver lease for its write: raced against a driver starting at the same
moment (real SQLite study, real lease, real launcher and study store), one waits for or is refused
by the other, and neither ever sees the other's write half done."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from types import SimpleNamespace

from tests.conftest import TINY_SETTINGS
from tuner.analysis.reads import StudyStore
from tuner.errors import SweepConflict
from tuner.spec import SweepSpec
from tuner.storage.lease import lease_engine, read
from tuner.storage.study import load_study
from tuner.sweeps.drive.lease import DriverBusy, LeaseKeeper, StopRequest
from tuner.sweeps.launch.launcher import Launcher
from tuner.sweeps.study.create import create_study
from tuner.sweeps.widen.control import widen

ROUNDS = 8


@dataclass
class Body:
    param: str = "learning_rate"
    edge: str | None = "low"
    add_trials: int = 1


def _view(db: str) -> tuple[int, int, float]:
    """What a driver samples from: (widenings, n_trials, learning_rate's lower edge)."""
    attrs = load_study("w", db).user_attrs
    low = attrs["space_def"]["params"]["learning_rate"]["low"]
    return len(attrs.get("widened") or []), SweepSpec.of(attrs).n_trials, low


def _widen_now(state, barrier: threading.Barrier, out: dict) -> None:
    """The REST widen, at the barrier; out["widen"]: its answer, None if refused."""
    barrier.wait()
    try:
        out["widen"] = widen(state, "w", Body())
    except SweepConflict:
        out["widen"] = None


def _drive_now(db: str, barrier: threading.Barrier, out: dict) -> None:
    """A sweep driver starting at the barrier; out["driver"]: the study as it read it under the
    lease, None if refused."""
    keeper = LeaseKeeper(db, "w", StopRequest())
    barrier.wait()
    try:
        keeper.acquire()
    except DriverBusy:
        out["driver"] = None
        return
    try:
        out["driver"] = _view(db)
        time.sleep(0.05)  # a driver holds the lease while it samples
    finally:
        keeper.close()


def test_widen_and_a_starting_driver_never_interleave(tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    create_study(
        "w",
        storage_url=db,
        space="tiny",
        n_trials=2,
        storage_path=tmp_path / "st",
        overrides={"set": TINY_SETTINGS},
    )
    state = SimpleNamespace(
        store=StudyStore(db),
        launcher=Launcher(db, on_exit=lambda handle, code: None),
        leases=lease_engine(db),
    )
    for _ in range(ROUNDS):
        before = _view(db)
        barrier = threading.Barrier(2)
        out: dict = {}

        threads = [
            threading.Thread(target=_widen_now, args=(state, barrier, out)),
            threading.Thread(target=_drive_now, args=(db, barrier, out)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        after = _view(db)
        widened = (before[0] + 1, before[1] + 1)
        assert out["widen"] is not None or out["driver"] is not None, "both refused"
        if out["widen"] is None:
            assert after == before  # refused: nothing written
        else:
            assert after[:2] == widened and out["widen"]["n_trials"] == widened[1]  # no lost write
            assert after[2] < before[2]
        if out["driver"] is not None:
            assert out["driver"] in (before, after)  # the whole widen or none of it, never half
        assert read(state.leases, "w").state() == "stopped"  # both gave the lease back
    state.store.close()
    state.leases.dispose()
