"""An idle worker's cost, counted in statements per minute (the budget: 30 without a wake,
12 with one). Counted from every connection the worker's threads open, after a warm-up that lets
the idle backoff reach its ceiling."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connections
from django.db.backends.signals import connection_created

from tests.worker.conftest import RunningWorker
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.runtime.worker import Worker, WorkerConfig

WARM_UP_SECONDS = 8.0
WINDOW_SECONDS = 30.0
BUDGET_PER_MINUTE = {False: 30, True: 12}


def uninstall(hook: object) -> None:
    """Take an ``execute_wrapper`` hook off this thread's connections: the test's own connection
    outlives the test, and a hook left on it would route every later test's statements through
    Django's cursor wrapper even where the driver skips it."""
    for wrapper in connections.all(initialized_only=True):
        while hook in wrapper.execute_wrappers:
            wrapper.execute_wrappers.remove(hook)


class StatementCounter:
    """Counts statements run by threads whose name marks them as the worker's."""

    def __init__(self) -> None:
        self.count = 0
        self.counting = False
        self._lock = threading.Lock()

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        name = threading.current_thread().name
        if self.counting and (name.startswith("jobs-") or name == "test-worker"):
            with self._lock:
                self.count += 1
        return execute(sql, params, many, context)

    def install(self, sender: Any, connection: Any, **_: Any) -> None:
        connection.execute_wrappers.append(self)


@pytest.fixture
def counter() -> Iterator[StatementCounter]:
    counting = StatementCounter()
    connection_created.connect(counting.install)
    yield counting
    connection_created.disconnect(counting.install)
    uninstall(counting)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("use_wake", [False, True], ids=["poll-only", "with-wake"])
def test_idle_statements_per_minute_stay_within_budget(
    counter: StatementCounter, use_wake: bool
) -> None:
    config = WorkerConfig.from_settings(queues=("default", "math"), use_wake=use_wake)
    running = RunningWorker(Worker(PostgresDriver(), config)).start()
    try:
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
    per_minute = counter.count * 60.0 / WINDOW_SECONDS
    print(f"idle statements per minute ({'with' if use_wake else 'without'} wake): {per_minute:g}")
    assert counter.count > 0, "the counter saw no statement at all"
    assert per_minute <= BUDGET_PER_MINUTE[use_wake], per_minute
