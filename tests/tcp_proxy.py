"""A TCP proxy a test controls, to cut one client off from a server (a network partition).

`TcpProxy(port)` listens on 127.0.0.1 and forwards every connection to 127.0.0.1:`port`. `block()`
resets the connections it carries and resets every new one until `unblock()`, as a firewall
rejecting the client's packets would: the client's database calls fail at once with a connection
error, and the server never sees the client again until unblocked. Other clients, connected to the
server directly, are not affected.
"""

from __future__ import annotations

import socket
import struct
import threading


def _reset(sock: socket.socket) -> None:
    """Close with RST (linger 0), so the peer sees a broken connection, and wake the thread
    blocked reading it."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._blocked = False
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="tcp-proxy").start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._blocked:
                    _reset(client)
                    continue
            try:
                server = socket.create_connection(self._target)
            except OSError:
                _reset(client)
                continue
            with self._lock:
                self._open.update((client, server))
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            self._drop(src, dst)

    def _drop(self, *socks: socket.socket) -> None:
        with self._lock:
            for s in socks:
                if s in self._open:
                    self._open.discard(s)
                    _reset(s)

    def block(self) -> None:
        """Cut the client off: reset every carried connection and every new one."""
        with self._lock:
            self._blocked = True
            carried = list(self._open)
        self._drop(*carried)

    def unblock(self) -> None:
        with self._lock:
            self._blocked = False

    def close(self) -> None:
        self._closed = True
        self.block()
        self._listener.close()

    def url(self, database_url: str) -> str:
        """`database_url` (a SQLAlchemy URL on 127.0.0.1:target port) through this proxy."""
        from sqlalchemy.engine import make_url

        return make_url(database_url).set(port=self.port).render_as_string(hide_password=False)
