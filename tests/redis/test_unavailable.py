"""Failure is loud and quick: a Redis that refuses the connection, drops it, or never answers
raises ``DriverUnavailable`` (``X_DRIVER_UNAVAILABLE``) from every call, at once or within the
cache's socket timeout, never a hang; and the same driver works again once Redis is back.
Loopback only: the servers here are sockets of this test on 127.0.0.1."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.test import override_settings

from tests.drivers.support import claim, request
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.errors import DriverUnavailable

SOCKET_TIMEOUT = 0.5


def free_port() -> int:
    """A loopback port where nothing listens (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def cache_on(port: int) -> Iterator[str]:
    """A django-redis cache alias "down" on 127.0.0.1:``port``, for this block."""
    alias = "down"
    caches = {
        **settings.CACHES,
        alias: {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": SOCKET_TIMEOUT, "SOCKET_TIMEOUT": SOCKET_TIMEOUT},
        },
    }
    with override_settings(CACHES=caches):
        yield alias


@contextlib.contextmanager
def server(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A loopback server that hands each accepted connection to ``handle``."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.1)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)
            handle(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        listener.close()


CALLS: dict[str, Callable[[RedisDriver], Any]] = {
    "enqueue": lambda d: d.job_enqueue(request=request()),
    "claim": lambda d: claim(d),
    "demand": lambda d: d.queue_demand(queues=["default"]),
    "list": lambda d: d.job_list(),
    "workers": lambda d: d.worker_list(),
}


def unavailable(driver: RedisDriver, call: Callable[[RedisDriver], Any], bound: float) -> None:
    started = time.monotonic()
    with pytest.raises(DriverUnavailable) as caught:
        call(driver)
    took = time.monotonic() - started
    assert caught.value.code == "X_DRIVER_UNAVAILABLE"
    assert "cannot be reached" in str(caught.value)
    assert took < bound, f"took {took:.2f}s to fail"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_refused_connection_is_unavailable_at_once(name: str) -> None:
    with cache_on(free_port()) as alias:
        unavailable(RedisDriver(alias=alias), CALLS[name], bound=1.0)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_dropped_connection_is_unavailable_at_once(name: str) -> None:
    with server(lambda conn: conn.close()) as port, cache_on(port) as alias:
        unavailable(RedisDriver(alias=alias), CALLS[name], bound=1.0)


def test_a_server_that_never_answers_is_unavailable_within_the_socket_timeout() -> None:
    # Accepts and reads nothing: only the socket timeout ends the wait.
    with server(lambda conn: None) as port, cache_on(port) as alias:
        unavailable(RedisDriver(alias=alias), CALLS["claim"], bound=SOCKET_TIMEOUT * 3)


def _forward(conn: socket.socket, target: tuple[str, int]) -> None:
    upstream = socket.create_connection(target)

    def pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    threading.Thread(target=pump, args=(conn, upstream), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, conn), daemon=True).start()


def test_the_same_driver_works_again_once_redis_is_back(redis_store: RedisDriver) -> None:
    """Down, then back on the same address: the next call after the outage succeeds, with no
    new driver (the worker's loop backs off, calls reset_connection and carries on)."""
    real = urlsplit(settings.REDIS_URL)
    target = (real.hostname or "127.0.0.1", real.port or 6379)
    db = (real.path or "/0").lstrip("/") or "0"
    port = free_port()
    with cache_on(port) as alias:
        caches = settings.CACHES
        caches[alias]["LOCATION"] = f"redis://127.0.0.1:{port}/{db}"
        driver = RedisDriver(alias=alias, prefix=redis_store.prefix)
        unavailable(driver, CALLS["enqueue"], bound=1.0)
        driver.reset_connection()
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(8)
        accepting = threading.Thread(
            target=lambda: _forward(listener.accept()[0], target), daemon=True
        )
        accepting.start()
        try:
            req = request()
            assert driver.job_enqueue(request=req).created
            assert redis_store.job_get(job_id=req.id) is not None
        finally:
            listener.close()
