"""Bounds on the server's connections before any request reaches the app: header size and time, and
how many connections are open at once.

uvicorn's defaults bound none of them on the way in: with httptools an 8 MB header was parsed,
half-sent requests held their connections open indefinitely (40 stayed open for 80 s), and 20
unfinished 5 MB headers added 103 MB to the server, all before authentication or the Host check.
Here requests are parsed by h11, a request head longer than `Limits.header_bytes` is a 431 and
the connection is closed (h11's own bound, set to the same size, covers only a head still
incomplete), a connection that has not sent a whole request head within `Limits.header_s` of
connecting, or of the first byte of its next request, is closed, idle keep-alive connections
close after `Limits.keep_alive_s`, and a connection beyond `Limits.connections` is closed at once.

The header timer needs a hook uvicorn does not offer: `BoundedH11Protocol` subclasses uvicorn's
h11 protocol (its `connection_made`, `data_received` and h11 `conn`), passed as `Config(http=...)`,
which uvicorn documents; `check_uvicorn` refuses versions this was not tested with, and
tests/tuner/api/test_connections.py checks each bound over a raw socket.
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
    connections: int = 256  # open at once


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


def _head_length(pending: bytes) -> int:
    """Bytes of the request head in `pending` (all of it while the blank line has not arrived)."""
    end = pending.find(b"\r\n\r\n")
    return end + 4 if end >= 0 else len(pending)


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the head size bound, the head timer and the connection cap of
    `limits` (a subclass made by `protocol` sets it)."""

    limits: ClassVar[Limits] = Limits()
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.connections:
            transport.close()  # over the cap: refused before a byte is read
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        idle = self.conn.their_state is h11.IDLE  # a request head is (still) arriving
        if idle and _head_length(self.conn.trailing_data[0] + data) > self.limits.header_bytes:
            self.transport.write(HEAD_TOO_LONG)  # h11 bounds only a head still incomplete
            self.transport.close()
            return
        super().data_received(data)
        waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
        if waiting and self.conn.trailing_data[0]:  # part of the next request head has arrived
            self._arm()
        elif not waiting:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

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
