"""The body deadline, the keep-alive timer after an early answer and the per-address cap of
tuner/api/connections.py, over raw sockets against the server `rnntune serve` runs (issue
"Hardening, fifth round", item 1): a head with no body, or a body slower than the minimum rate, is
closed on time whether or not the app has answered; a body sent in pieces at the rate is served;
keep-alive closes a connection whose body ended after the answer; one address cannot hold more than
its share; and the reported sequence, 256 sockets at once, leaves a legitimate client served. The
bounds are shortened here so the tests take seconds."""

from __future__ import annotations

import json
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from tests.tuner.api.fixtures import live_app, make_study
from tests.tuner.api.test_connections import closed_within
from tuner.api import ApiSettings, create_app
from tuner.api.connections import Limits

WRITE = "w" * 32
LIMITS = Limits(
    header_s=1.0, keep_alive_s=1.0, body_s=1.0, body_rate=64.0, body_max_s=4.0, connections=64, per_client=4
)
# The defaults but for the timers: the reported sequence meets the caps the server ships with.
REPORTED = Limits(header_s=2.0, keep_alive_s=2.0, body_s=2.0)
ATTACK = b"GET / HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 100000\r\n\r\n"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("bodies")
    db_url = f"sqlite:///{root / 's.db'}"
    make_study(db_url, "fixed", root / "storage" / "fixed")
    return create_app(ApiSettings(db_url=db_url, storage_root=root / "storage", api_token=WRITE))


@pytest.fixture(scope="module")
def server(app):
    with live_app(app, LIMITS) as url:
        yield url


def connect(url: str, source: str = "127.0.0.1") -> socket.socket:
    address = urlsplit(url)
    return socket.create_connection((address.hostname, address.port), timeout=10, source_address=(source, 0))


def post_head(url: str, length: int) -> bytes:
    return (
        f"POST /studies HTTP/1.1\r\nHost: {urlsplit(url).netloc}\r\nAuthorization: Bearer {WRITE}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def status_of(answer: bytes) -> int:
    return int(answer.split(b"\r\n", 1)[0].split(b" ")[1])


def get_studies(url: str, source: str) -> int:
    """The status of a plain `GET /studies` sent from `source` on a connection of its own."""
    with connect(url, source) as conn:
        conn.sendall(
            f"GET /studies HTTP/1.1\r\nHost: {urlsplit(url).netloc}\r\nConnection: close\r\n\r\n".encode()
        )
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return status_of(answer)


def test_a_head_with_no_body_is_a_408_on_time(server):
    """With a write token, a `POST /studies` head and no body stayed open at least 40 s."""
    with connect(server) as conn:
        conn.sendall(post_head(server, 100))
        start = time.monotonic()
        conn.settimeout(LIMITS.body_s + 3)
        answer = conn.recv(65536)
        waited = time.monotonic() - start
        assert status_of(answer) == 408, answer[:200]
        assert LIMITS.body_s - 0.2 <= waited, waited
        assert closed_within(conn, 1.0) is not None


def test_a_body_below_the_rate_is_closed(server):
    """One byte at a time, slower than `body_rate`: closed once `body_s` is spent, not at the end."""
    with connect(server) as conn:
        conn.sendall(post_head(server, 1000))
        start, closed = time.monotonic(), None
        while closed is None and time.monotonic() - start < LIMITS.body_max_s + 2:
            try:
                conn.sendall(b" ")
            except (BrokenPipeError, ConnectionResetError):
                closed = time.monotonic() - start
                break
            closed = closed_within(conn, 0.25)
            closed = None if closed is None else time.monotonic() - start
    assert closed is not None and LIMITS.body_s - 0.2 <= closed < LIMITS.body_s + 1.5, closed


def test_a_body_sent_in_pieces_at_the_rate_is_served(server):
    """Longer than `body_s` in all, but each piece buys the next one time: the app reads it all."""
    body = json.dumps({"name": "paced", "space": "tiny", "pad": "a" * 300}).encode()
    with connect(server) as conn:
        conn.sendall(post_head(server, len(body)))
        for k in range(0, len(body), 100):
            conn.sendall(body[k : k + 100])
            time.sleep(0.45)  # 100 bytes buy 1.5 s at 64 B/s; four pieces take 1.8 s > body_s
        conn.settimeout(10)
        answer = conn.recv(65536)
    assert status_of(answer) == 422, answer[:300]  # the app read the body and refused a field of it
    assert b'"pad"' in answer  # named from the body: it arrived whole


def test_keep_alive_closes_a_connection_whose_body_ended_after_the_answer(server):
    """The answer (403: a foreign Host) comes before the body; once the body arrives the connection is
    idle, and keep-alive closes it (before, any byte of the body cancelled the timer for good)."""
    with connect(server) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 10\r\n\r\n")
        assert status_of(conn.recv(65536)) == 403
        conn.sendall(b"0123456789")
        waited = closed_within(conn, LIMITS.keep_alive_s + 2)
    assert waited is not None and waited >= LIMITS.keep_alive_s - 0.2, waited


def test_one_address_holds_at_most_its_share(server):
    held = [connect(server) for _ in range(LIMITS.per_client)]
    try:
        time.sleep(0.2)
        with connect(server) as extra:
            waited = closed_within(extra, 2.0)
        assert waited is not None and waited < LIMITS.header_s, waited
        assert get_studies(server, "127.0.0.2") == 200  # another address is served meanwhile
    finally:
        for conn in held:
            conn.close()


def _attack(url: str, sockets: list[socket.socket]) -> None:
    """The reported sequence on one socket: the head, the 403 read, one byte of the body, silence."""
    conn = connect(url)
    sockets.append(conn)
    try:
        conn.sendall(ATTACK)
        conn.settimeout(5)
        if conn.recv(65536):
            conn.sendall(b"x")
    except OSError:
        pass  # refused at once: over the cap


def test_the_reported_sequence_on_256_sockets_leaves_a_client_served(app):
    """256 sockets from one address: those over the per-address cap are closed at once, the rest
    when their body is late, and a legitimate `GET /studies` is served while they are open."""
    with live_app(app, REPORTED) as url:
        sockets: list[socket.socket] = []
        workers = [threading.Thread(target=_attack, args=(url, sockets)) for _ in range(256)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        started = time.monotonic()
        try:
            assert len(sockets) == 256
            assert get_studies(url, "127.0.0.2") == 200
            assert get_studies(url, "127.0.0.3") == 200
            deadline = REPORTED.body_s + 3
            still_open = [
                s
                for s in sockets
                if closed_within(s, max(0.0, deadline - (time.monotonic() - started))) is None
            ]
            assert not still_open, f"{len(still_open)} of 256 still open {deadline} s after the attack"
        finally:
            for conn in sockets:
                conn.close()
