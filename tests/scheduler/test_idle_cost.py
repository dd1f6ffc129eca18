"""A leading scheduler with nothing due, counted in statements per minute (the budget: 6 with the
default lease of 60 s, renewed every 20 s). Counted from the scheduler thread's connection over a
whole minute, after it has taken the lease."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db.backends.signals import connection_created

from tests.scheduler.conftest import make_task, registry_of
from tests.worker.test_idle_cost import uninstall
from ultimat3_jobs.runtime.scheduler import SchedulerConfig

THREAD_NAME = "test-scheduler-idle"
WINDOW_SECONDS = 60.0
BUDGET_PER_MINUTE = 6


class StatementCounter:
    """Counts statements run by the scheduler's thread."""

    def __init__(self) -> None:
        self.count = 0
        self.counting = False
        self.statements: list[str] = []
        self._lock = threading.Lock()

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        if self.counting and threading.current_thread().name == THREAD_NAME:
            with self._lock:
                self.count += 1
                self.statements.append(" ".join(sql.split())[:80])
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
def test_a_leader_with_nothing_due_stays_within_budget(make_scheduler, counter) -> None:
    new_year = make_task("tests.sched.new_year", "0 0 1 1 *")
    defaults = SchedulerConfig()
    assert (defaults.lease_seconds, defaults.renew_every) == (60.0, 20.0)
    running = make_scheduler(
        "idle",
        registry=registry_of(new_year),
        thread_name=THREAD_NAME,
        lease_seconds=defaults.lease_seconds,
    )
    assert running.scheduler.leading.wait(10), "the scheduler never led"
    counter.counting = True
    time.sleep(WINDOW_SECONDS)
    counter.counting = False
    assert running.leading, "the scheduler lost the lease while idle"
    running.stop()

    per_minute = counter.count * 60.0 / WINDOW_SECONDS
    print(f"idle leader statements per minute: {per_minute:g}")
    assert counter.count > 0, "the counter saw no statement at all (not even a renewal)"
    assert per_minute <= BUDGET_PER_MINUTE, counter.statements
