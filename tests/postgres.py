"""A throwaway PostgreSQL server for tests: Debian's PostgreSQL binaries, a temp data folder, 127.0.0.1.

`postgres_server(base_dir)` initialises a cluster with a password-protected superuser (so tests can
check the password never leaks), starts it on a free port and yields its SQLAlchemy URL; the server
is stopped and its folder removed afterwards. PostgreSQL refuses to run as root, so as root the
server runs as the `postgres` system user (created by Debian's package).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PG_BIN_DIRS = [
    Path(os.environ.get("RNNTUNE_PG_BIN", "/usr/lib/postgresql/15/bin")),
    *sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True),
]
USER = "rnntune"
DATABASE = "rnntune"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries, or no unprivileged user to run them as."""


def pg_bin() -> Path:
    for d in PG_BIN_DIRS:
        if (d / "initdb").is_file() and (d / "pg_ctl").is_file():
            return d
    raise PostgresUnavailable(
        f"PostgreSQL binaries (initdb, pg_ctl) not found in {', '.join(map(str, PG_BIN_DIRS))}"
    )


# Every port free_port handed out in this process: the kernel may hand a port it just released out
# again, and a Ray node given the same port for two of its components fails to start.
_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A port free on loopback now, and never one this process was given before."""
    for _ in range(1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError("no loopback port free that was not handed out already")


def _run_as() -> tuple[list[str], pwd.struct_passwd | None]:
    """The command prefix that runs a PostgreSQL binary unprivileged, and that user (None: ourselves)."""
    if os.geteuid() != 0:
        return [], None
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable(
            "running as root and there is no `postgres` user to run the server as"
        ) from None
    runuser = shutil.which("runuser")
    if not runuser:
        raise PostgresUnavailable("running as root and `runuser` is missing (util-linux)")
    return [runuser, "-u", "postgres", "--"], user


def _call(prefix: list[str], args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, *args], capture_output=True, text=True)


@contextlib.contextmanager
def postgres_server(base_dir: str | os.PathLike | None = None) -> Iterator[str]:
    """Start a PostgreSQL server; yield `postgresql+psycopg2://rnntune:PASSWORD@127.0.0.1:PORT/rnntune`."""
    bindir = pg_bin()
    prefix, user = _run_as()
    root = Path(tempfile.mkdtemp(prefix="rnntune-pg-", dir=base_dir))
    data, sockets, log = root / "data", root / "sock", root / "server.log"
    password = secrets.token_hex(12)
    pwfile = root / "pw"
    pwfile.write_text(password + "\n")
    sockets.mkdir()
    if user is not None:
        root.chmod(0o755)
        for p in (root, sockets, pwfile):
            os.chown(p, user.pw_uid, user.pw_gid)
    init = _call(
        prefix,
        [
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            "--pwfile",
            str(pwfile),
            "-A",
            "scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
        ],
    )
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise PostgresUnavailable(f"initdb failed: {init.stderr.strip() or init.stdout.strip()}")
    port = free_port()
    options = f"-p {port} -h 127.0.0.1 -k {sockets} -F -c max_connections=100"
    start = _call(
        prefix,
        [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "-t", "60", "start"],
    )
    if start.returncode != 0:
        text = log.read_text() if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise PostgresUnavailable(f"pg_ctl start failed: {start.stderr.strip()} {text[-2000:]}")
    try:
        import psycopg2

        deadline = time.monotonic() + 30
        while True:
            try:
                conn = psycopg2.connect(
                    host="127.0.0.1", port=port, user=USER, password=password, dbname="postgres"
                )
                break
            except psycopg2.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {DATABASE}")
        conn.close()
        yield f"postgresql+psycopg2://{USER}:{password}@127.0.0.1:{port}/{DATABASE}"
    finally:
        _call(prefix, [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(root, ignore_errors=True)
