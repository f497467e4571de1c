"""Running the app under uvicorn on a socket bound up front (so a taken port is a clear error)."""

from __future__ import annotations

import socket
import sys

import uvicorn
from fastapi import FastAPI

from tuner.api.connections import Limits, server_config


class PortUnavailable(OSError):
    """The host/port cannot be bound."""


def bind(host: str, port: int) -> socket.socket:
    """A socket bound and already listening, so a client that connects as soon as the URL is printed
    waits in the backlog until uvicorn accepts, instead of being refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # uvicorn's own default backlog
    except OSError as err:
        sock.close()
        raise PortUnavailable(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}"


def make_server(app: FastAPI, limits: Limits | None = None) -> uvicorn.Server:
    """uvicorn serving `app` with the connection bounds of `limits` (connections.py)."""
    return uvicorn.Server(server_config(app, limits or Limits()))


def serve(server: uvicorn.Server, sock: socket.socket) -> int:
    """Serve until Ctrl-C/SIGTERM: uvicorn runs the app's shutdown (which stops sweeps it started
    cleanly), then re-raises the signal, which ends here as a normal exit."""
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        print("server stopped", file=sys.stderr)
    finally:
        sock.close()
    return 0 if server.started else 1


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1
