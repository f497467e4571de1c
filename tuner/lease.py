"""The driver lease: exactly one sweep process drives a study, and a stop is a request stored beside it.

One row per study in our own table, `rnntune_driver_leases`, in the study's database beside Optuna's
tables. The table is created if missing (schema version `LEASE_SCHEMA`, 1; a later change of its
columns gets an Alembic migration with its own version table, never Optuna's `alembic_version`).

* A driver takes the lease with one atomic compare-and-set, `UPDATE … WHERE study = ? AND (owner
  IS NULL OR owner = ? OR expires_at < now)`, and holds it only if that updated the row. It renews
  the lease every `HEARTBEAT_S`; a lease not renewed for `LEASE_TTL_S` has expired and may be taken
  over. Expiry is wall-clock time, so the hosts of drivers and API need clocks in sync (NTP) to
  well within `LEASE_TTL_S`.
* Every start of a sweep (`begin`) bumps the row's `generation`; the driver of that start carries it.
  A stop request records the generation it stops, so a stop that arrives while a sweep is still
  starting up is kept (the driver sees it as soon as it holds the lease), and an old stop never
  stops a later start.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

LEASE_SCHEMA = 1
# A driver renews its lease this often; one not renewed for LEASE_TTL_S is dead and may be taken over.
HEARTBEAT_S = 10.0
LEASE_TTL_S = 60.0
# How often a driver looks for a stored stop request (one small SELECT).
STOP_POLL_S = 1.0

_metadata = sa.MetaData()
leases = sa.Table(
    "rnntune_driver_leases",
    _metadata,
    sa.Column("study_name", sa.String(512), primary_key=True),
    sa.Column("owner", sa.String(64), nullable=True),
    sa.Column("host", sa.String(255), nullable=True),
    sa.Column("pid", sa.Integer, nullable=True),
    sa.Column("expires_at", sa.Float, nullable=False, default=0.0),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("stop_generation", sa.Integer, nullable=False, default=-1),
    sa.Column("stop_reason", sa.String(500), nullable=True),
)


@dataclass(frozen=True)
class Lease:
    """One study's lease row as read at one moment."""

    study_name: str
    owner: str | None
    host: str | None
    pid: int | None
    expires_at: float
    generation: int
    stop_generation: int
    stop_reason: str | None

    @property
    def stop_requested(self) -> bool:
        """A stop was asked for the latest start of the sweep."""
        return self.stops(self.generation)

    def stops(self, generation: int) -> bool:
        """Whether a stored stop request applies to the driver of start `generation`."""
        return self.stop_generation >= generation

    def state(self, now: float | None = None) -> str:
        """`live` (a driver holds it), `expired` (its driver stopped renewing: dead) or `stopped`
        (released by a driver that ended, or never taken). A driver on this host whose pid is gone
        has expired at once: nobody needs to wait out its lease."""
        if self.owner is None:
            return "stopped"
        if self.expires_at < (time.time() if now is None else now):
            return "expired"
        if self.host == socket.gethostname() and self.pid is not None and not _pid_alive(self.pid):
            return "expired"
        return "live"

    def describe(self) -> str:
        left = self.expires_at - time.time()
        return f"pid {self.pid} on {self.host} (lease {'expires in' if left >= 0 else 'expired'} {abs(left):.0f} s)"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def lease_engine(url: str) -> Engine:
    """An engine on the study database for the lease table (created there if missing)."""
    if make_url(url).get_backend_name() == "sqlite":
        engine = sa.create_engine(url, connect_args={"timeout": 60})
    else:
        engine = sa.create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=2)
    _metadata.create_all(engine, checkfirst=True)
    return engine


def _ensure_row(conn: sa.Connection, name: str) -> None:
    exists = conn.execute(sa.select(leases.c.study_name).where(leases.c.study_name == name)).first()
    if exists is None:
        try:
            with conn.begin_nested():
                conn.execute(
                    sa.insert(leases).values(
                        study_name=name, expires_at=0.0, generation=0, stop_generation=-1
                    )
                )
        except sa.exc.IntegrityError:  # another process inserted it first: the row is there either way
            pass


def _lease(row: sa.Row) -> Lease:
    return Lease(**row._asdict())


def read(engine: Engine, name: str) -> Lease | None:
    with engine.connect() as conn:
        row = conn.execute(sa.select(leases).where(leases.c.study_name == name)).first()
    return _lease(row) if row is not None else None


def read_all(engine: Engine) -> dict[str, Lease]:
    with engine.connect() as conn:
        return {row.study_name: _lease(row) for row in conn.execute(sa.select(leases))}


def begin(engine: Engine, name: str) -> int:
    """Register a new start of the study's sweep; returns its generation (for the driver)."""
    with engine.begin() as conn:
        _ensure_row(conn, name)
        conn.execute(
            sa.update(leases).where(leases.c.study_name == name).values(generation=leases.c.generation + 1)
        )
        return int(
            conn.execute(sa.select(leases.c.generation).where(leases.c.study_name == name)).scalar_one()
        )


def acquire(engine: Engine, name: str, owner: str) -> Lease | None:
    """Take the study's lease for `owner` (compare-and-set); None, and no change, if another
    driver holds it and it has not expired. Raises nothing for a held lease: the caller words it."""
    now = time.time()
    free = sa.or_(leases.c.owner.is_(None), leases.c.owner == owner, leases.c.expires_at < now)
    held = read(engine, name)
    if held is not None and held.owner is not None and held.state(now) == "expired":
        free = sa.or_(
            free, leases.c.owner == held.owner
        )  # its driver died on this host: take it from that owner only
    with engine.begin() as conn:
        _ensure_row(conn, name)
        taken = conn.execute(
            sa.update(leases)
            .where(leases.c.study_name == name)
            .where(free)
            .values(owner=owner, host=socket.gethostname(), pid=os.getpid(), expires_at=now + LEASE_TTL_S)
        ).rowcount
    return read(engine, name) if taken == 1 else None


def renew(engine: Engine, name: str, owner: str) -> Lease | None:
    """Extend `owner`'s lease; the lease as it now is, or None if `owner` no longer holds it."""
    with engine.begin() as conn:
        held = conn.execute(
            sa.update(leases)
            .where(leases.c.study_name == name, leases.c.owner == owner)
            .values(expires_at=time.time() + LEASE_TTL_S)
        ).rowcount
    return read(engine, name) if held == 1 else None


def release(engine: Engine, name: str, owner: str) -> None:
    """Give the lease back (a driver that ends cleanly); a no-op if `owner` no longer holds it."""
    with engine.begin() as conn:
        conn.execute(
            sa.update(leases)
            .where(leases.c.study_name == name, leases.c.owner == owner)
            .values(owner=None, expires_at=0.0)
        )


def request_stop(engine: Engine, name: str, reason: str) -> Lease:
    """Store a stop request for the current start of the study's sweep (any API instance may)."""
    with engine.begin() as conn:
        _ensure_row(conn, name)
        conn.execute(
            sa.update(leases)
            .where(leases.c.study_name == name)
            .values(stop_generation=leases.c.generation, stop_reason=reason[:500])
        )
    lease = read(engine, name)
    assert lease is not None
    return lease


def new_owner() -> str:
    """A fresh owner id for one driver process."""
    return uuid.uuid4().hex
