"""The server's connection bounds (tuner/api/connections.py), each over a raw socket against the
server `rnntune serve` runs: a head over the size bound is a 431, sent at once or in pieces, a half-sent head and an idle
keep-alive connection are closed on time, a connection over the cap is closed at once, and a
normal client is served throughout. The bounds are shortened here so the test takes seconds."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from tests.tuner.api.fixtures import live_app, make_study
from tuner.api import ApiSettings, create_app
from tuner.api.connections import Limits, check_uvicorn

LIMITS = Limits(header_bytes=16 * 1024, header_s=1.0, keep_alive_s=1.0, connections=8)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("connections")
    db_url = f"sqlite:///{root / 's.db'}"
    make_study(db_url, "fixed", root / "storage" / "fixed")
    app = create_app(ApiSettings(db_url=db_url, storage_root=root / "storage"))
    with live_app(app, LIMITS) as url:
        yield url


def connect(url: str) -> socket.socket:
    address = urlsplit(url)
    return socket.create_connection((address.hostname, address.port), timeout=10)


def closed_within(conn: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed `conn` (reading and dropping what it sends), None if it
    stayed open `seconds`."""
    start = time.monotonic()
    conn.settimeout(0.1)
    while time.monotonic() - start < seconds:
        try:
            if conn.recv(65536) == b"":
                return time.monotonic() - start
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - start
    return None


def head(url: str, extra: str = "") -> bytes:
    host = urlsplit(url).netloc
    return f"GET /studies/fixed HTTP/1.1\r\nHost: {host}\r\n{extra}".encode()


@pytest.mark.parametrize("pieces", [1, 8], ids=["at_once", "in_pieces"])
def test_a_head_over_the_size_bound_is_a_431(server, pieces):
    request = head(server, f"X-Padding: {'a' * (LIMITS.header_bytes + 1024)}\r\n\r\n")
    size = -(-len(request) // pieces)
    with connect(server) as conn:
        for k in range(pieces):
            conn.sendall(request[k * size : (k + 1) * size])
            time.sleep(0.02)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.split(b"\r\n", 1)[0].split(b" ")[1] == b"431", answer[:200]
    assert b"fixed" not in answer
    assert httpx.get(f"{server}/studies/fixed").status_code == 200


def test_a_head_under_the_bound_is_served(server):
    padding = "a" * (LIMITS.header_bytes // 2)
    response = httpx.get(f"{server}/studies/fixed", headers={"X-Padding": padding})
    assert response.status_code == 200


@pytest.mark.parametrize("sent", ["", "GET /studies/fixed HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "])
def test_a_half_sent_head_is_closed_on_time(server, sent):
    with connect(server) as conn:
        conn.sendall(sent.encode())
        waited = closed_within(conn, LIMITS.header_s + 3)
    assert waited is not None and LIMITS.header_s - 0.2 <= waited, waited


def test_a_slow_head_on_a_kept_alive_connection_is_closed_too(server):
    """The timer starts again with the first byte of the next request on the same connection."""
    with connect(server) as conn:
        conn.sendall(head(server, "\r\n"))
        assert b" 200 " in conn.recv(65536).split(b"\r\n", 1)[0]
        conn.sendall(b"GET /studies HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
        waited = closed_within(conn, LIMITS.header_s + LIMITS.keep_alive_s + 3)
    assert waited is not None, "the half-sent second request kept the connection open"


def test_an_idle_kept_alive_connection_is_closed(server):
    with connect(server) as conn:
        conn.sendall(head(server, "\r\n"))
        assert b" 200 " in conn.recv(65536).split(b"\r\n", 1)[0]
        waited = closed_within(conn, LIMITS.keep_alive_s + 3)
    assert waited is not None


def test_connections_over_the_cap_are_closed_at_once(server):
    held = [connect(server) for _ in range(LIMITS.connections)]
    try:
        time.sleep(0.2)  # the server has taken them all
        with connect(server) as extra:
            waited = closed_within(extra, 2.0)
        assert waited is not None and waited < LIMITS.header_s, waited
    finally:
        for conn in held:
            conn.close()
    time.sleep(0.2)
    assert httpx.get(f"{server}/studies/fixed").status_code == 200


def test_uvicorn_outside_the_tested_versions_is_refused():
    check_uvicorn("0.54.0")
    with pytest.raises(RuntimeError, match=r"uvicorn 2\.0\.0 is outside the versions"):
        check_uvicorn("2.0.0")
    with pytest.raises(RuntimeError, match=r"uvicorn 0\.30\.1 is outside"):
        check_uvicorn("0.30.1")
