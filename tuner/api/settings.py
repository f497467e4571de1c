"""Settings of the study API: where studies, checkpoints and datasets live, who may call it.

The database URL is the flag, else `$RNNTUNE_DB_URL`, else ./studies/rnntune.db (as for every
`rnntune` command, `tuner.storage.study.resolve_db_url`). The storage root (checkpoints are served only
from inside it, whatever the database says) is `--storage`, else `$RNNTUNE_STORAGE`, else ./studies;
an `s3://BUCKET/PREFIX` there serves checkpoints from that object store, only keys below it.
The data roots (the only folders a request may name as `data_dir`) are `--data-root` (repeatable),
else `$RNNTUNE_DATA_ROOTS` (paths separated by `os.pathsep`); none by default. Tokens only come from
the environment so they never show in a process list: `RNNTUNE_API_TOKEN` guards every request that
changes anything; `RNNTUNE_API_READ_TOKEN` guards reads, and writes too when it is the only token.
Every request must name a Host in `allowed_hosts` (DNS rebinding): `$RNNTUNE_ALLOWED_HOSTS`
(comma-separated, `*` for any), by default the loopback names plus the listening address (for a
wildcard address, this machine's host names). A server listening beyond loopback needs a read token
unless started with `--public-reads` (`check_exposure`): otherwise anyone who reaches the port reads
every study and checkpoint. The MLflow servers a request may name as `mlflow_uri` are
`$RNNTUNE_MLFLOW_URIS` (comma-separated; none by default: then only a local store inside the
storage root, `tuner.sweeps.trackers.uris`).
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from tuner.errors import InvalidInput
from tuner.storage.object_store import ObjectLocation, location
from tuner.storage.study import DEFAULT_STORAGE_ROOT, STORAGE_ENV, resolve_db_url
from tuner.sweeps.trackers.uris import allowed_uris

DATA_ROOTS_ENV = "RNNTUNE_DATA_ROOTS"
ALLOWED_HOSTS_ENV = "RNNTUNE_ALLOWED_HOSTS"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
WILDCARD_ADDRESSES = ("0.0.0.0", "::", "")
# Largest request body accepted (bytes); a study definition is a few kB.
MAX_BODY_BYTES = 1_000_000


@dataclass(frozen=True)
class ApiSettings:
    db_url: str
    storage_root: Path
    api_token: str | None = None
    read_token: str | None = None
    data_roots: tuple[Path, ...] = ()
    mlflow_uris: tuple[str, ...] = ()  # RNNTUNE_MLFLOW_URIS: the MLflow servers clients may name
    allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS  # None: any Host
    max_body_bytes: int = MAX_BODY_BYTES
    public_reads: bool = False  # `--public-reads`: reads open on a non-loopback address, knowingly
    # The service's bounds (tuner.api.bounds): studies held, inline space size, processes run, and
    # trials packed on one CPU.
    max_studies: int = 10_000
    max_space_bytes: int = 65_536
    max_runs: int = 8
    max_trials_per_cpu: int = 4
    # `--storage s3://BUCKET/PREFIX`: the object store location checkpoints are served from (only
    # keys below it); `storage_root` is then the local folder of the run folders' working copies.
    object_root: ObjectLocation | None = None

    @property
    def write_token(self) -> str | None:
        """The token that writes need: the write token, else the read token (a read token alone
        must not leave writes open), else none."""
        return self.api_token or self.read_token

    @classmethod
    def from_env(
        cls,
        db_url: str | None = None,
        storage_root: str | os.PathLike | None = None,
        data_roots: list[str] | None = None,
        host: str | None = None,
        public_reads: bool = False,
    ) -> ApiSettings:
        """Settings from the flags given, then the environment; `host` is the listening address."""
        roots = data_roots or [p for p in os.environ.get(DATA_ROOTS_ENV, "").split(os.pathsep) if p]
        hosts_env = [h.strip() for h in os.environ.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()]
        if hosts_env:
            hosts: tuple[str, ...] | None = None if "*" in hosts_env else normalise_hosts(hosts_env)
        else:
            hosts = default_hosts(host)
        where = location(
            storage_root or os.environ.get(STORAGE_ENV) or DEFAULT_STORAGE_ROOT,
            "--storage" if storage_root else STORAGE_ENV,
        )
        return cls(
            db_url=resolve_db_url(db_url),
            storage_root=(where if isinstance(where, Path) else DEFAULT_STORAGE_ROOT).resolve(),
            object_root=None if isinstance(where, Path) else where,
            api_token=os.environ.get("RNNTUNE_API_TOKEN") or None,
            read_token=os.environ.get("RNNTUNE_API_READ_TOKEN") or None,
            data_roots=tuple(_real(r) for r in roots),
            mlflow_uris=allowed_uris(),
            allowed_hosts=hosts,
            public_reads=public_reads,
            **_bounds_from_env(),
        )


BOUND_ENVS = {
    "max_studies": "RNNTUNE_MAX_STUDIES",
    "max_space_bytes": "RNNTUNE_MAX_SPACE_BYTES",
    "max_runs": "RNNTUNE_MAX_RUNS",
    "max_trials_per_cpu": "RNNTUNE_MAX_TRIALS_PER_CPU",
}


def _bounds_from_env() -> dict[str, int]:
    """The bounds set in the environment; a value that is not a positive integer is an error naming it."""
    out = {}
    for field, env in BOUND_ENVS.items():
        raw = os.environ.get(env)
        if raw is None or not raw.strip():
            continue
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if not 1 <= value <= 10**9:
            raise InvalidInput(f"{env}: must be a whole number from 1 to 1000000000, not {raw!r}")
        out[field] = value
    return out


class ReadsExposed(InvalidInput):
    """A server about to listen beyond loopback with reads open, and no `--public-reads`."""


def is_loopback(host: str | None) -> bool:
    """Whether `host` (a listening address or name) is this machine's loopback only."""
    if host is None or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# RFC 9110 §7.2: Host = uri-host [ ":" port ]; uri-host is a reg-name (unreserved, pct-encoded and
# sub-delims characters), an IPv4 address or a bracketed IPv6 literal; port is digits. No userinfo
# (`user@host`), no path, no other port.
_HOST = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9\-._~!$&'()*+,;=%]+))(?::(?P<port>[0-9]{0,5}))?"
)


def host_name(netloc: str) -> str:
    """The name in a Host header (`name[:port]`, `[v6]:port`), lower-case, without port or brackets;
    '' when it is not a Host of RFC 9110 §7.2 (userinfo, a path, a non-numeric port)."""
    match = _HOST.fullmatch(netloc.strip())
    if match is None:
        return ""
    return (match["v6"] or match["name"]).lower()


def normalise_hosts(entries: list[str]) -> tuple[str, ...]:
    """RNNTUNE_ALLOWED_HOSTS' entries as the guard compares them: lower-case, without a port or an
    IPv6 literal's brackets (`LocalHost`, `api:8000`, `[::1]` and a bare `::1` are `localhost`,
    `api`, `::1`, `::1`); InvalidInput naming the variable for an entry that is not `host[:port]`."""
    names = []
    for entry in entries:
        name = _bare_ipv6(entry) or host_name(entry)  # Compose's default list names ::1 unbracketed
        if not name:
            raise InvalidInput(
                f"{ALLOWED_HOSTS_ENV}: {entry!r} is not a host name, IPv4 address or [IPv6] address "
                "(optionally with :port); separate names with commas"
            )
        names.append(name)
    return tuple(dict.fromkeys(names))


def _bare_ipv6(entry: str) -> str | None:
    """`entry` as a lower-case IPv6 address when it is one written without brackets, else None."""
    try:
        address = ipaddress.ip_address(entry.strip())
    except ValueError:
        return None
    return str(address).lower() if address.version == 6 else None


def default_hosts(host: str | None) -> tuple[str, ...]:
    """Host names requests may use by default: loopback names, plus the listening address, or this
    machine's names when it listens on every address."""
    if is_loopback(host):
        return LOOPBACK_HOSTS
    assert host is not None
    extra = (
        {socket.gethostname().lower(), socket.getfqdn().lower()}
        if host in WILDCARD_ADDRESSES
        else {host.strip("[]").lower()}
    )
    return LOOPBACK_HOSTS + tuple(sorted(extra - set(LOOPBACK_HOSTS) - {""}))


def check_exposure(host: str, settings: ApiSettings) -> None:
    """ReadsExposed when the server would listen beyond loopback with no read token and without
    `public_reads`: anyone reaching the port could read every study and download checkpoints."""
    if is_loopback(host) or settings.read_token or settings.public_reads:
        return
    raise ReadsExposed(
        f"refusing to listen on {host!r} with reads open to anyone who reaches it: set "
        f"RNNTUNE_API_READ_TOKEN (docker/make-env writes one), or pass --public-reads to serve "
        f"every study and checkpoint without a token on purpose"
    )


def _real(path: str | os.PathLike) -> Path:
    return Path(path).expanduser().resolve()
