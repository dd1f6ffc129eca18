"""An idle worker's cost on the Redis driver, counted in Redis commands per minute (the budget,
as on PostgreSQL: 30 without a wake, 12 with one). Counted with MONITOR: every command a client
sends to the test's database, after a warm-up that lets the idle backoff reach its ceiling.
Commands a script runs inside Redis are not the client's and are not counted."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import pytest
import redis
from django.conf import settings

from tests.worker.conftest import RunningWorker
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.runtime.worker import Worker, WorkerConfig

WARM_UP_SECONDS = 8.0
WINDOW_SECONDS = 30.0
BUDGET_PER_MINUTE = {False: 30, True: 12}
# "<time> [<db> <client address>] "<COMMAND>" ...": a client's command; "[<db> lua]" a script's.
LINE = re.compile(r'^\+?[\d.]+ \[(\d+) ([^\]]+)\] "([^"]+)"')


class CommandCounter:
    """Counts the commands clients send to one database, from a MONITOR connection."""

    def __init__(self, driver: RedisDriver) -> None:
        pool = driver.redis().connection_pool
        self.db = int(pool.connection_kwargs.get("db", 0))
        # A client of its own with no socket timeout: an idle minute may send nothing at all.
        self._client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=None)
        self._monitor = self._client.monitor()
        self.counting = False
        self.commands: list[str] = []
        self.failure: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> CommandCounter:
        self._monitor.__enter__()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._monitor.__exit__(*exc)
        self._client.close()

    def _read(self) -> None:
        connection = self._monitor.connection
        while not self._stop.is_set():
            try:
                raw = connection.read_response()
            except Exception as exc:
                if not self._stop.is_set():
                    self.failure = exc
                return
            line = raw.decode() if isinstance(raw, bytes) else str(raw)
            found = LINE.match(line)
            if not found or not self.counting:
                continue
            db, client, command = found.groups()
            if int(db) == self.db and client != "lua":
                self.commands.append(command.upper())


@pytest.fixture
def worker_driver(redis_store: RedisDriver) -> Iterator[RedisDriver]:
    yield redis_store


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("use_wake", [False, True], ids=["poll-only", "with-wake"])
def test_idle_commands_per_minute_stay_within_budget(
    worker_driver: RedisDriver, use_wake: bool
) -> None:
    assert settings.REDIS_URL
    config = WorkerConfig.from_settings(queues=("default", "math"), use_wake=use_wake)
    running = RunningWorker(Worker(worker_driver, config)).start()
    try:
        with CommandCounter(worker_driver) as counter:
            if use_wake:
                deadline = time.monotonic() + 10
                while not running.worker.wake_live and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert running.worker.wake_live, "the wake never went live"
            time.sleep(WARM_UP_SECONDS)
            counter.counting = True
            time.sleep(WINDOW_SECONDS)
            counter.counting = False
    finally:
        running.stop()
    count = len(counter.commands)
    per_minute = count * 60.0 / WINDOW_SECONDS
    told = "with" if use_wake else "without"
    print(f"idle Redis commands per minute ({told} wake): {per_minute:g} {counter.commands}")
    assert counter.failure is None, counter.failure
    assert count > 0, "the counter saw no command at all"
    assert per_minute <= BUDGET_PER_MINUTE[use_wake], counter.commands
