"""Bounds on the server's connections before any request reaches the app: header size and time,
body time, idle time, and how many connections are open at once, in all and per client address.

uvicorn's defaults bound none of them on the way in: with httptools an 8 MB header was parsed,
half-sent requests held their connections open indefinitely (40 stayed open for 80 s), and 20
unfinished 5 MB headers added 103 MB to the server, all before authentication or the Host check.
Here requests are parsed by h11, a request head longer than `Limits.header_bytes` is a 431 and
the connection is closed (h11's own bound, set to the same size, covers only a head still
incomplete), a connection that has not sent a whole request head within `Limits.header_s` of
connecting, or of the first byte of its next request, is closed, idle keep-alive connections
close after `Limits.keep_alive_s`, and a connection beyond `Limits.connections` in all, or beyond
`Limits.per_client` from one client address, is closed at once.

The body has a deadline of its own, for every request, from the end of its head: whatever the app
answers, and however early (a 403 for a foreign Host answers before reading a byte of the body), the
body must arrive within `Limits.body_s` plus one second per `Limits.body_rate` bytes it has sent,
and within `Limits.body_max_s` in all; else the connection is closed (a 408 first when no answer has
started). Without it a head naming `Content-Length: 100000` and then one byte held its connection
indefinitely, 256 of them every connection the server had, and uvicorn's keep-alive timer, which
any byte cancels, was not armed again once the body ended after the answer; here it is, after every
request the connection finishes.

The timers need hooks uvicorn does not offer: `BoundedH11Protocol` subclasses uvicorn's h11
protocol (its `connection_made`, `data_received`, `on_response_complete`, `flow`, `cycle` and h11
`conn`), passed as `Config(http=...)`, which uvicorn documents; `check_uvicorn` refuses versions
this was not tested with, and tests/tuner/api/test_connections.py checks each bound over a raw socket.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

TESTED_UVICORN = ((0, 40), (1, 0))  # [from, to): the versions whose H11Protocol this subclass was checked on


@dataclass(frozen=True)
class Limits:
    """The connection bounds (docs/api.md, "Connections")."""

    header_bytes: int = 64 * 1024  # request line and headers, all together
    header_s: float = 10.0  # to send a whole request head
    keep_alive_s: float = 5.0  # idle between requests on one connection
    body_s: float = 10.0  # to send a body, from the end of its head, before the rate counts
    body_rate: float = 1024.0  # bytes per second a body must keep up past `body_s`
    body_max_s: float = 120.0  # to send a whole body, at any rate
    connections: int = 256  # open at once
    per_client: int = 32  # open at once from one client address


def check_uvicorn(version: str = uvicorn.__version__) -> None:
    """RuntimeError naming the version when uvicorn is outside the range this module was tested on."""
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    low, high = TESTED_UVICORN
    if not low <= parts < high:
        raise RuntimeError(
            f"uvicorn {version} is outside the versions rnntune's connection bounds were tested with "
            f"({'.'.join(map(str, low))} to before {'.'.join(map(str, high))}; tuner/api/connections.py)"
        )


_DETAIL = b'{"detail":"request line and headers exceed this server\'s bound (docs/api.md, Connections)"}'
HEAD_TOO_LONG = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
    + f"content-length: {len(_DETAIL)}\r\nconnection: close\r\n\r\n".encode()
    + _DETAIL
)


_SLOW = b'{"detail":"the request body did not arrive in time (docs/api.md, Connections)"}'
BODY_TOO_SLOW = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    + f"content-length: {len(_SLOW)}\r\nconnection: close\r\n\r\n".encode()
    + _SLOW
)


def _head_length(pending: bytes) -> int:
    """Bytes of the request head in `pending` (all of it while the blank line has not arrived)."""
    end = pending.find(b"\r\n\r\n")
    return end + 4 if end >= 0 else len(pending)


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the head size bound, the head, body and keep-alive timers and the
    connection caps of `limits` (a subclass made by `protocol` sets it)."""

    limits: ClassVar[Limits] = Limits()
    _head_timer: asyncio.TimerHandle | None = None
    _body_timer: asyncio.TimerHandle | None = None
    _body_from = 0.0  # when the body's clock started (moved on while uvicorn pauses reading)
    _body_bytes = 0  # bytes received since the head ended

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        host = self.client[0] if self.client else None
        same = sum(1 for c in self.connections if (getattr(c, "client", None) or (None,))[0] == host)
        if len(self.connections) > self.limits.connections or same > self.limits.per_client:
            transport.close()  # over a cap: refused before a byte is read
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        idle = self.conn.their_state is h11.IDLE  # a request head is (still) arriving
        if idle and _head_length(self.conn.trailing_data[0] + data) > self.limits.header_bytes:
            self.transport.write(HEAD_TOO_LONG)  # h11 bounds only a head still incomplete
            self.transport.close()
            return
        if self.conn.their_state is h11.SEND_BODY:
            self._body_bytes += len(data)
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._stop_body()
        super().connection_lost(exc)

    def _watch(self) -> None:
        """Arm the timer the connection's state calls for: the body's while a body is due, the
        head's while a head is arriving, keep-alive once both sides finished and nothing is pending."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            self._disarm()
            if self._body_timer is None:
                self._body_from, self._body_bytes = self.loop.time(), 0
                self._body_timer = self.loop.call_later(self.limits.body_s, self._body_check)
            return
        self._stop_body()
        if state is not h11.IDLE:
            self._disarm()  # the request is in; the app's answer is not the client's to hurry
        elif self.conn.trailing_data[0]:  # part of the next request head has arrived
            self._arm()
        elif (
            self.conn.our_state is h11.IDLE
            and self._head_timer is None
            and self.timeout_keep_alive_task is None
        ):
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )  # uvicorn arms it when its answer ends, and any byte of a late body cancels it

    def _body_check(self) -> None:
        """Close the connection (a 408 first, if no answer has started) once the body is late:
        past `body_s` plus its bytes at `body_rate`, or past `body_max_s`. While uvicorn pauses
        reading (the app has not taken what arrived) the clock stops: the delay is not the client's."""
        self._body_timer = None
        if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
            return
        now = self.loop.time()
        if self.flow.read_paused:
            self._body_from += 1.0
            self._body_timer = self.loop.call_later(1.0, self._body_check)
            return
        limits = self.limits
        allowed = min(limits.body_max_s, limits.body_s + self._body_bytes / limits.body_rate)
        if now - self._body_from < allowed:
            self._body_timer = self.loop.call_later(allowed - (now - self._body_from), self._body_check)
            return
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(BODY_TOO_SLOW)
        self.transport.close()

    def _stop_body(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _arm(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.limits.header_s, self._head_timeout)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def protocol(limits: Limits) -> type[asyncio.Protocol]:
    """`BoundedH11Protocol` with `limits` (uvicorn makes one protocol object per connection)."""
    check_uvicorn()
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"limits": limits})


def server_config(app: Any, limits: Limits) -> uvicorn.Config:
    """uvicorn's Config for the API with `limits` applied."""
    return uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        http=protocol(limits),
        h11_max_incomplete_event_size=limits.header_bytes,
        timeout_keep_alive=int(limits.keep_alive_s) or 1,
    )
