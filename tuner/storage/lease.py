"""The driver lease: exactly one sweep process drives a study, and a stop is a request stored beside it.

One row per study in our own table, `rnntune_driver_leases`, in the study's database beside Optuna's
tables. The table is created if missing; a table made by an older rnntune gets the columns added
since (`_migrate`, Alembic operations, never Optuna's `alembic_version`), and its old rows read
with epoch 0 and no namespace identity.

* A driver takes the lease with one atomic compare-and-set, `UPDATE … WHERE study = ? AND (owner
  IS NULL OR owner = ? OR expires_at < now)`, and holds it only if that updated the row. It renews
  the lease every `HEARTBEAT_S`; a lease not renewed for `LEASE_TTL_S` has expired and may be taken
  over. Expiry is wall-clock time, so the hosts of drivers and API need clocks in sync (NTP) to
  well within `FENCE_MARGIN_S`. `RNNTUNE_LEASE_TTL_S` sets the TTL (default 60 s); the heartbeat
  is a sixth of it and the fencing margin a quarter.
* Every take of the lease bumps the row's `epoch`, the fencing token: a driver's writes go through
  only while the row still has its owner and epoch (`renew(..., epoch=)`, `tuner.sweeps.drive.lease`).
* Every start of a sweep (`begin`) bumps the row's `generation`; the driver of that start carries it.
  A stop request records the generation it stops, so a stop that arrives while a sweep is still
  starting up is kept (the driver sees it as soon as it holds the lease), and an old stop never
  stops a later start. (A refused start bumps it too, which is why fencing has its own epoch.)
* A holder on this machine whose pid is gone has expired at once. "This machine" is the same
  hostname, PID namespace and boot: containers with host networking share the hostname but not
  the PID namespace, and a pid seen from another namespace says nothing.
"""

from __future__ import annotations

import functools
import os
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine, make_url

from tuner.errors import InvalidInput

LEASE_SCHEMA = 2  # 2 added epoch, pid_ns and boot_id
TTL_ENV = "RNNTUNE_LEASE_TTL_S"


def _ttl_from_env() -> float:
    raw = os.environ.get(TTL_ENV, "60")
    try:
        ttl = float(raw)
    except ValueError:
        ttl = 0.0
    if not ttl > 0:
        raise InvalidInput(f"{TTL_ENV} must be a positive number of seconds, got {raw!r}")
    return ttl


# A lease not renewed for LEASE_TTL_S is dead and may be taken over; its driver renews it every
# HEARTBEAT_S and fences itself (stops its trials, writes nothing more) FENCE_MARGIN_S before that.
LEASE_TTL_S = _ttl_from_env()
HEARTBEAT_S = LEASE_TTL_S / 6
FENCE_MARGIN_S = LEASE_TTL_S / 4
# How often a driver looks for a stored stop request (one small SELECT).
STOP_POLL_S = min(1.0, HEARTBEAT_S)

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
    sa.Column("epoch", sa.Integer, nullable=False, default=0, server_default="0"),
    sa.Column("pid_ns", sa.String(64), nullable=True),
    sa.Column("boot_id", sa.String(64), nullable=True),
)


def _added_columns() -> list[sa.Column]:
    """Schema 2's columns, as added in place to a schema-1 table (existing rows: epoch 0, no identity)."""
    return [
        sa.Column("epoch", sa.Integer, nullable=False, server_default="0"),
        sa.Column("pid_ns", sa.String(64), nullable=True),
        sa.Column("boot_id", sa.String(64), nullable=True),
    ]


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text().strip() or None
    except OSError:
        return None


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")  # `pid:[INODE]`
    except OSError:
        return None


@dataclass(frozen=True)
class Identity:
    """Where a process runs: pids compare only within one hostname, PID namespace and boot."""

    host: str
    pid_ns: str | None
    boot_id: str | None

    @classmethod
    def here(cls) -> Identity:
        """This process's identity (read once: it does not change while the process runs)."""
        return _here()


@functools.cache
def _here() -> Identity:
    return Identity(socket.gethostname(), _pid_namespace(), _read_text("/proc/sys/kernel/random/boot_id"))


@dataclass(frozen=True)
class Lease:
    """One study's lease row as read at one moment (`pid_ns`, `boot_id` None: written by an older
    rnntune, or on a system without /proc)."""

    study_name: str
    owner: str | None
    host: str | None
    pid: int | None
    expires_at: float
    generation: int
    stop_generation: int
    stop_reason: str | None
    epoch: int = 0
    pid_ns: str | None = None
    boot_id: str | None = None

    @property
    def stop_requested(self) -> bool:
        """A stop was asked for the latest start of the sweep."""
        return self.stops(self.generation)

    def stops(self, generation: int) -> bool:
        """Whether a stored stop request applies to the driver of start `generation`."""
        return self.stop_generation >= generation

    def same_machine(self, here: Identity | None = None) -> bool:
        """Whether the holder's pid can be checked from this process: same hostname, PID namespace
        and boot, all three known."""
        here = here or Identity.here()
        return (
            self.host == here.host
            and None not in (self.pid_ns, here.pid_ns, self.boot_id, here.boot_id)
            and (self.pid_ns, self.boot_id) == (here.pid_ns, here.boot_id)
        )

    def state(self, now: float | None = None) -> str:
        """`live` (a driver holds it), `expired` (its driver stopped renewing: dead) or `stopped`
        (released by a driver that ended, or never taken). A driver on this machine (`same_machine`)
        whose pid is gone has expired at once: nobody needs to wait out its lease."""
        if self.owner is None:
            return "stopped"
        if self.expires_at < (time.time() if now is None else now):
            return "expired"
        if self.pid is not None and self.same_machine() and not _pid_alive(self.pid):
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
    """An engine on the study database for the lease table (created or migrated there if needed)."""
    if make_url(url).get_backend_name() == "sqlite":
        engine = sa.create_engine(url, connect_args={"timeout": 60})
    else:
        engine = sa.create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=2)
    _metadata.create_all(engine, checkfirst=True)
    _migrate(engine)
    return engine


def _missing(conn: sa.Connection) -> list[sa.Column]:
    have = {c["name"] for c in sa.inspect(conn).get_columns(leases.name)}
    return [column for column in _added_columns() if column.name not in have]


def _migrate(engine: Engine) -> None:
    """Add schema 2's columns to a lease table an older rnntune created. Idempotent; when two
    processes migrate at once, the loser's duplicate column fails and it finds the columns there."""
    with engine.connect() as conn:
        if not _missing(conn):
            return
    try:
        with engine.begin() as conn:
            ops = Operations(MigrationContext.configure(conn))
            for column in _missing(conn):
                ops.add_column(leases.name, column)
    except (sa.exc.OperationalError, sa.exc.ProgrammingError):
        with engine.connect() as conn:
            if _missing(conn):
                raise


def _ensure_row(conn: sa.Connection, name: str) -> None:
    exists = conn.execute(sa.select(leases.c.study_name).where(leases.c.study_name == name)).first()
    if exists is None:
        try:
            with conn.begin_nested():
                conn.execute(
                    sa.insert(leases).values(
                        study_name=name, expires_at=0.0, generation=0, stop_generation=-1, epoch=0
                    )
                )
        except sa.exc.IntegrityError:  # another process inserted it first: the row is there either way
            pass


def _lease(row: sa.Row) -> Lease:
    return Lease(**row._asdict())


def _read(conn: sa.Connection, name: str) -> Lease | None:
    row = conn.execute(sa.select(leases).where(leases.c.study_name == name)).first()
    return _lease(row) if row is not None else None


def read(engine: Engine, name: str) -> Lease | None:
    with engine.connect() as conn:
        return _read(conn, name)


def read_all(engine: Engine, names: list[str] | None = None) -> dict[str, Lease]:
    """The leases of these studies (of every study when `names` is None), by study name."""
    query = sa.select(leases)
    if names is not None:
        query = query.where(leases.c.study_name.in_(names))
    with engine.connect() as conn:
        return {row.study_name: _lease(row) for row in conn.execute(query)}


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
    """Take the study's lease for `owner` (compare-and-set) under a new epoch; None, and no change,
    if another driver holds it and it has not expired. Raises nothing for a held lease: the caller
    words it."""
    now = time.time()
    free = sa.or_(leases.c.owner.is_(None), leases.c.owner == owner, leases.c.expires_at < now)
    held = read(engine, name)
    if held is not None and held.owner is not None and held.state(now) == "expired":
        free = sa.or_(
            free, leases.c.owner == held.owner
        )  # its driver died on this machine: take it from that owner only
    here = Identity.here()
    with engine.begin() as conn:
        _ensure_row(conn, name)
        taken = conn.execute(
            sa.update(leases)
            .where(leases.c.study_name == name)
            .where(free)
            .values(
                owner=owner,
                host=here.host,
                pid=os.getpid(),
                pid_ns=here.pid_ns,
                boot_id=here.boot_id,
                expires_at=now + LEASE_TTL_S,
                epoch=sa.func.coalesce(leases.c.epoch, 0) + 1,
            )
        ).rowcount
        return _read(conn, name) if taken == 1 else None


def renew(engine: Engine, name: str, owner: str, epoch: int | None = None) -> Lease | None:
    """Extend `owner`'s lease (only at `epoch`, when given) in one compare-and-set; the lease as it
    now is, or None if `owner` no longer holds it at that epoch."""
    held = [leases.c.study_name == name, leases.c.owner == owner]
    if epoch is not None:
        held.append(leases.c.epoch == epoch)
    with engine.begin() as conn:
        renewed = conn.execute(
            sa.update(leases).where(*held).values(expires_at=time.time() + LEASE_TTL_S)
        ).rowcount
        return _read(conn, name) if renewed == 1 else None


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
