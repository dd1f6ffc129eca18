"""A TCP proxy to PostgreSQL that names backends as a connection pooler does.

A pooler answers the client's connection itself and sends a ``BackendKeyData`` of its own (its
cancel requests must reach whichever backend serves the client at the time), so the pid the
client was told is not the pid of the backend that runs its statements. This proxy keeps one
backend per client, as a pooler in session mode would, and renames it in that message alone:
the path the driver must not prove a direct session on. Connect to it without TLS or GSSAPI
(``sslmode``/``gssencmode`` ``disable``): it reads the server's messages from the first byte.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

PID_OFFSET = 1_000_000


class RenamingProxy:
    """Listens on 127.0.0.1 (``port``) and forwards each connection to ``host:port``, or to the
    server's Unix socket in the directory ``host`` when it is a path (as libpq reads a host that
    starts with ``/``; the embedded server of ``scripts/test`` is reached that way)."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = _connect(*self._target)
            except OSError:
                client.close()  # the client's connect fails at once, not at its timeout
                continue
            with self._lock:
                self._sockets += [client, server]
            threading.Thread(target=_copy, args=(client, server), daemon=True).start()
            threading.Thread(target=_rename, args=(server, client), daemon=True).start()


def _connect(host: str, port: int) -> socket.socket:
    if host.startswith("/"):
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.connect(f"{host}/.s.PGSQL.{port}")
        except OSError:
            server.close()
            raise
        return server
    return socket.create_connection((host, port))


def _copy(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    _shut(target)


def _rename(server: socket.socket, client: socket.socket) -> None:
    """Forward the server's messages, with the pid in ``BackendKeyData`` ('K') changed."""
    with contextlib.suppress(OSError):
        for kind, body in _messages(server):
            if kind == b"K":
                (pid,) = struct.unpack("!i", body[:4])
                body = struct.pack("!i", pid + PID_OFFSET) + body[4:]
            client.sendall(kind + struct.pack("!i", len(body) + 4) + body)
    _shut(client)


def _messages(sock: socket.socket) -> Iterator[tuple[bytes, bytes]]:
    while header := _exactly(sock, 5):
        (length,) = struct.unpack("!i", header[1:])
        yield header[:1], _exactly(sock, length - 4)


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def proxied(settings: dict[str, Any], proxy: RenamingProxy) -> dict[str, Any]:
    """``settings`` (an alias's) connecting through ``proxy``."""
    options = {**(settings.get("OPTIONS") or {}), "sslmode": "disable", "gssencmode": "disable"}
    return {**settings, "HOST": "127.0.0.1", "PORT": proxy.port, "OPTIONS": options}
