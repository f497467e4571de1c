"""The driver lease on real databases: drivers in separate processes racing for it on SQLite and on
PostgreSQL, expiry and take-over, and stop requests tied to the start they stop."""

from __future__ import annotations

import multiprocessing
import time

from tuner.storage import lease
from tuner.storage.lease import acquire, begin, lease_engine, new_owner, read, release, renew, request_stop

RACERS = 8


def _race(url: str, name: str, barrier, results) -> None:
    engine = lease_engine(url)
    owner = new_owner()
    barrier.wait()
    results.put((owner, acquire(engine, name, owner) is not None))
    barrier.wait()  # every driver stays alive until all have tried
    engine.dispose()


def _racing_drivers(url: str, name: str) -> list[tuple[str, bool]]:
    # Fresh processes without a pytest worker's threads; the fork server imports this module once.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
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
    code = f"from tuner.storage.lease import *; e = lease_engine({url!r}); assert acquire(e, 's', 'dead') is not None"
    subprocess.run([sys.executable, "-c", code], check=True)
    engine = lease_engine(url)
    assert read(engine, "s").owner == "dead" and read(engine, "s").state() == "expired"
    taken = acquire(engine, "s", new_owner())
    assert taken is not None and taken.state() == "live"


def _dead_driver_lease(url: str) -> None:
    """A driver on this machine that took the lease and died (its pid is gone)."""
    import subprocess
    import sys

    code = f"from tuner.storage.lease import *; e = lease_engine({url!r}); assert acquire(e, 's', 'dead') is not None"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lease_stores_the_pid_namespace_and_boot_it_was_taken_in(tmp_path):
    engine = lease_engine(f"sqlite:///{tmp_path / 'l.db'}")
    taken = acquire(engine, "s", new_owner())
    here = lease.Identity.here()
    assert (taken.host, taken.pid_ns, taken.boot_id) == (here.host, here.pid_ns, here.boot_id)
    assert taken.pid_ns.startswith("pid:[") and len(taken.boot_id) == 36
    assert taken.same_machine()


def test_same_hostname_in_another_pid_namespace_is_not_judged_by_its_pid(tmp_path):
    """A container with host networking: the host's hostname, its own PID namespace. Its pid means
    nothing here, so its lease lives until it expires, and nobody takes it over early."""
    import sqlalchemy as sa

    url = f"sqlite:///{tmp_path / 'l.db'}"
    _dead_driver_lease(url)  # a pid that does not exist in this namespace
    engine = lease_engine(url)
    assert read(engine, "s").state() == "expired"  # same namespace and boot: dead at once
    here = lease.Identity.here()
    for other in ({"pid_ns": "pid:[1]"}, {"boot_id": "00000000-0000-0000-0000-000000000000"}):
        with engine.begin() as conn:
            conn.execute(
                sa.update(lease.leases).values(**{"pid_ns": here.pid_ns, "boot_id": here.boot_id, **other})
            )
        held = read(engine, "s")
        assert not held.same_machine() and held.state() == "live", other
        assert acquire(engine, "s", new_owner()) is None, other


def _schema_1_table(engine) -> None:
    """The lease table as rnntune created it before epoch and namespace identity, with a row."""
    import sqlalchemy as sa

    old = sa.MetaData()
    table = sa.Table(
        "rnntune_driver_leases",
        old,
        sa.Column("study_name", sa.String(512), primary_key=True),
        sa.Column("owner", sa.String(64), nullable=True),
        sa.Column("host", sa.String(255), nullable=True),
        sa.Column("pid", sa.Integer, nullable=True),
        sa.Column("expires_at", sa.Float, nullable=False, default=0.0),
        sa.Column("generation", sa.Integer, nullable=False, default=0),
        sa.Column("stop_generation", sa.Integer, nullable=False, default=-1),
        sa.Column("stop_reason", sa.String(500), nullable=True),
    )
    old.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            sa.insert(table).values(
                study_name="old", owner="gone", host="elsewhere", pid=1, expires_at=0.0, generation=3
            )
        )


def _check_migrates(url: str) -> None:
    import sqlalchemy as sa

    raw = sa.create_engine(url)
    _schema_1_table(raw)
    raw.dispose()
    engine = lease_engine(url)
    lease_engine(url).dispose()  # a second migration finds nothing to do
    old = read(engine, "old")
    assert old is not None
    assert (old.generation, old.epoch, old.pid_ns, old.boot_id) == (3, 0, None, None)
    assert old.state() == "expired" and not old.same_machine()
    taken = acquire(engine, "old", new_owner())
    assert taken is not None and taken.epoch == 1 and taken.pid_ns is not None
    engine.dispose()


def test_schema_1_lease_table_is_migrated_and_its_rows_still_read_on_sqlite(tmp_path):
    _check_migrates(f"sqlite:///{tmp_path / 'old.db'}")


def test_schema_1_lease_table_is_migrated_and_its_rows_still_read_on_postgres(postgres_url):
    import secrets

    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    database = f"mig_{secrets.token_hex(4)}"
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {database}"))
    admin.dispose()
    _check_migrates(make_url(postgres_url).set(database=database).render_as_string(hide_password=False))


def test_every_take_over_bumps_the_epoch_and_fences_the_old_holder(tmp_path, monkeypatch):
    engine = lease_engine(f"sqlite:///{tmp_path / 'l.db'}")
    first, second = new_owner(), new_owner()
    monkeypatch.setattr(lease, "LEASE_TTL_S", 0.5)
    old = acquire(engine, "s", first)
    assert renew(engine, "s", first, old.epoch) is not None
    time.sleep(0.7)
    new = acquire(engine, "s", second)
    assert new.epoch == old.epoch + 1
    assert renew(engine, "s", first, old.epoch) is None  # the old holder is refused
    assert renew(engine, "s", second, old.epoch) is None  # a stale epoch is refused, whoever asks
    assert renew(engine, "s", second, new.epoch).owner == second
