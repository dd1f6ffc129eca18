"""What survives a crash of redis-server, measured: a stream of enqueues runs against a Redis of
this test's own, SIGKILLed mid-stream and restarted on the same directory; every enqueue the
driver answered ``created`` is looked for afterwards. Per AOF setting, the report prints how
many acknowledged jobs were lost; with ``appendfsync always`` the rule is none.

A SIGKILL ends the process, not the machine: what Redis wrote to the kernel survives it under
every AOF setting. A power loss, which drops what was not fsynced, is not what this measures."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.test import override_settings

from tests.drivers.support import request
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.errors import DriverUnavailable

SERVER = shutil.which("redis-server")
STREAM_SECONDS = 1.5
MODES = {
    "always": ["--appendonly", "yes", "--appendfsync", "always"],
    "everysec": ["--appendonly", "yes", "--appendfsync", "everysec"],
    "no-aof": ["--appendonly", "no"],
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class OwnRedis:
    """A redis-server of this test on a loopback port, keeping its files in ``directory``."""

    def __init__(self, directory: Path, mode: list[str]) -> None:
        self.port = free_port()
        self.args = [
            str(SERVER),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(directory),
            "--save", "",
            *mode,
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        while True:
            try:
                if client.ping():
                    break
            except redis.exceptions.BusyLoadingError:
                pass
            except redis.exceptions.ConnectionError:
                pass
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        client.close()

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()


@contextlib.contextmanager
def driver_on(server: OwnRedis) -> Iterator[RedisDriver]:
    caches = {
        **settings.CACHES,
        "crash": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{server.port}/0",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 2},
        },
    }
    with override_settings(CACHES=caches):
        driver = RedisDriver(alias="crash")
        try:
            yield driver
        finally:
            driver.close()


def acknowledged_then_killed(driver: RedisDriver, server: OwnRedis) -> list[uuid.UUID]:
    """Enqueue one by one until the server dies under the stream; answer the ids it acked."""
    acked: list[uuid.UUID] = []
    failed = threading.Event()

    def stream() -> None:
        while True:
            req = request()
            try:
                if driver.job_enqueue(request=req).created:
                    acked.append(req.id)
            except DriverUnavailable:
                failed.set()
                return

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    time.sleep(STREAM_SECONDS)
    server.kill()
    assert failed.wait(10), "the stream did not notice the kill"
    thread.join(10)
    return acked


@pytest.mark.slow
@pytest.mark.skipif(SERVER is None, reason="redis-server is not installed")
@pytest.mark.parametrize("mode", sorted(MODES))
def test_acknowledged_enqueues_after_a_sigkill(tmp_path: Path, mode: str) -> None:
    server = OwnRedis(tmp_path, MODES[mode])
    server.start()
    try:
        with driver_on(server) as driver:
            acked = acknowledged_then_killed(driver, server)
            server.start()
            driver.reset_connection()
            lost = [job_id for job_id in acked if driver.job_get(job_id=job_id) is None]
    finally:
        server.stop()
    print(f"appendfsync {mode}: {len(acked)} enqueues acknowledged, {len(lost)} lost")
    assert len(acked) > 100, f"too few enqueues to measure: {len(acked)}"
    if mode == "no-aof":
        assert len(lost) == len(acked), "without AOF or snapshots nothing should survive"
    else:
        assert lost == []
