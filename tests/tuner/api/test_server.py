"""`tuner.api.server.bind`: the socket `serve` and `up` print a URL for is listening before uvicorn
starts (a client that connects at once waits instead of being refused), and a taken port is a clear
error."""

from __future__ import annotations

import socket

import pytest

from tuner.api.server import PortUnavailable, bind, url_of


def test_a_client_can_connect_as_soon_as_the_socket_is_bound():
    sock = bind("127.0.0.1", 0)
    try:
        with socket.create_connection(sock.getsockname()[:2], timeout=5) as client:
            assert client.getpeername() == sock.getsockname()
        assert url_of(sock) == f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def test_a_taken_port_names_the_address():
    taken = bind("127.0.0.1", 0)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(PortUnavailable, match=f"cannot listen on 127.0.0.1:{port}"):
            bind("127.0.0.1", port)
    finally:
        taken.close()
