"""The driver lease on real databases: drivers in separate processes racing for it on SQLite and on
PostgreSQL, expiry and take-over, and stop requests tied to the start they stop."""

from __future__ import annotations

import multiprocessing
import time

from tuner import lease
from tuner.lease import acquire, begin, lease_engine, new_owner, read, release, renew, request_stop

RACERS = 8


def _race(url: str, name: str, barrier, results) -> None:
    engine = lease_engine(url)
    owner = new_owner()
    barrier.wait()
    results.put((owner, acquire(engine, name, owner) is not None))
    barrier.wait()  # every driver stays alive until all have tried
    engine.dispose()


def _racing_drivers(url: str, name: str) -> list[tuple[str, bool]]:
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(RACERS), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(url, name, barrier, results)) for _ in range(RACERS)]
    for p in procs:
        p.start()
    outcome = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    return outcome


def _check_one_winner(url: str) -> None:
    lease_engine(url).dispose()  # the table exists before the race, as after any earlier sweep
    outcome = _racing_drivers(url, "raced")
    winners = [owner for owner, won in outcome if won]
    assert len(winners) == 1, outcome
    assert read(lease_engine(url), "raced").owner == winners[0]


def test_racing_drivers_on_sqlite_one_wins(tmp_path):
    _check_one_winner(f"sqlite:///{tmp_path / 'race.db'}")


def test_racing_drivers_on_postgres_one_wins(postgres_url):
    _check_one_winner(postgres_url)


def test_held_lease_is_refused_until_it_expires_then_taken_over(tmp_path, monkeypatch):
    engine = lease_engine(f"sqlite:///{tmp_path / 'l.db'}")
    first, second = new_owner(), new_owner()
    monkeypatch.setattr(lease, "LEASE_TTL_S", 1.0)
    assert acquire(engine, "s", first) is not None
    assert acquire(engine, "s", second) is None
    assert acquire(engine, "s", first) is not None  # the holder may take it again
    time.sleep(1.2)
    assert read(engine, "s").state() == "expired"
    taken = acquire(engine, "s", second)
    assert taken is not None and taken.owner == second
    assert renew(engine, "s", first) is None  # the old driver learns it lost the lease
    release(engine, "s", first)  # and cannot release another's
    assert read(engine, "s").owner == second
    release(engine, "s", second)
    assert read(engine, "s").state() == "stopped"


def test_stop_request_applies_to_its_start_only(tmp_path):
    engine = lease_engine(f"sqlite:///{tmp_path / 'l.db'}")
    first = begin(engine, "s")
    stopped = request_stop(engine, "s", "stop requested through the API")
    assert (
        stopped.stops(first) and stopped.stop_requested and stopped.stop_reason.startswith("stop requested")
    )
    second = begin(engine, "s")
    assert second == first + 1
    later = read(engine, "s")
    assert not later.stops(second) and not later.stop_requested


def test_unknown_study_has_no_lease(tmp_path):
    assert read(lease_engine(f"sqlite:///{tmp_path / 'l.db'}"), "nobody") is None


def test_lease_of_a_dead_driver_on_this_host_is_taken_over_at_once(tmp_path):
    """A driver killed outright on this host: its pid is gone, so its lease is expired before its time."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'l.db'}"
    code = f"from tuner.lease import *; e = lease_engine({url!r}); assert acquire(e, 's', 'dead') is not None"
    subprocess.run([sys.executable, "-c", code], check=True)
    engine = lease_engine(url)
    assert read(engine, "s").owner == "dead" and read(engine, "s").state() == "expired"
    taken = acquire(engine, "s", new_owner())
    assert taken is not None and taken.state() == "live"
