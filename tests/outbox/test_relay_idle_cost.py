"""An idle relay's cost, counted in statements per minute (the budget: 30 without a wake, 12
with one), the way ``tests/worker/test_idle_cost.py`` counts the worker's.

The relay runs in a thread of its own (``jobs-relay-test``); every statement run through a
Django connection of that thread is counted, after a warm-up that lets the idle backoff climb.
The wake's listener holds a psycopg session of its own outside Django, idle in ``LISTEN``, and
is not counted (as for the worker). The relay deletes nothing: published rows are the purge's
``outbox`` target, so no delete falls inside the window.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db.backends.signals import connection_created

from tests.worker.test_idle_cost import uninstall
from ultimat3_jobs.drivers import get_driver, get_outbox
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.runtime.relay import Relay, RelayConfig

RELAY_THREAD = "jobs-relay-test"
WARM_UP_SECONDS = 8.0
WINDOW_SECONDS = 30.0
BUDGET_PER_MINUTE = {False: 30, True: 12}
STATEMENT_NAMES = {sql: name for name, sql in STATEMENTS.items()}


class RelayStatementCounter:
    """Counts statements run by the relay's thread."""

    def __init__(self) -> None:
        self.count = 0
        self.counting = False
        self.statements: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        if self.counting and threading.current_thread().name == RELAY_THREAD:
            with self._lock:
                self.count += 1
                self.statements[STATEMENT_NAMES.get(sql, "other")] += 1
        return execute(sql, params, many, context)

    def install(self, sender: Any, connection: Any, **_: Any) -> None:
        connection.execute_wrappers.append(self)


@pytest.fixture
def counter() -> Iterator[RelayStatementCounter]:
    counting = RelayStatementCounter()
    connection_created.connect(counting.install)
    yield counting
    connection_created.disconnect(counting.install)
    uninstall(counting)


@pytest.mark.slow
@pytest.mark.usefixtures("other_store")
@pytest.mark.django_db(transaction=True, databases=["default", "jobs"])
@pytest.mark.parametrize("use_wake", [False, True], ids=["poll-only", "with-wake"])
def test_relay_idle_statements_per_minute_stay_within_budget(
    counter: RelayStatementCounter, use_wake: bool
) -> None:
    config = RelayConfig.from_settings(use_wake=use_wake)
    relay = Relay(get_outbox(), get_driver(), config)
    thread = threading.Thread(target=relay.run, name=RELAY_THREAD, daemon=True)
    thread.start()
    try:
        assert relay.started.wait(10)
        if use_wake:
            deadline = time.monotonic() + 10
            while not relay.wake_live and time.monotonic() < deadline:
                time.sleep(0.05)
            assert relay.wake_live, "the wake never went live"
        time.sleep(WARM_UP_SECONDS)
        counter.counting = True
        time.sleep(WINDOW_SECONDS)
        counter.counting = False
    finally:
        relay.request_stop(reason="test finished")
        thread.join(10)
    assert not thread.is_alive(), "the relay did not stop"
    per_minute = counter.count * 60.0 / WINDOW_SECONDS
    print(
        f"\nrelay idle statements per minute ({'with' if use_wake else 'without'} wake): "
        f"{per_minute:g} ({counter.count} in {WINDOW_SECONDS:g} s: "
        f"{', '.join(f'{n} {name}' for name, n in sorted(counter.statements.items()))})"
    )
    assert counter.count > 0, "the counter saw no statement at all"
    assert counter.statements["outbox_purge_published"] == 0, "the purge deletes, not the relay"
    assert per_minute <= BUDGET_PER_MINUTE[use_wake], per_minute
