"""Helpers shared by the PostgreSQL driver's tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.db import connection, connections

from ultimat3_jobs.drivers.postgres.listen import LISTEN_APPLICATION_NAME


def eventually(predicate: Callable[[], bool], timeout: float) -> bool:
    """Whether ``predicate()`` came true within ``timeout`` seconds (polled every 5 ms)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def terminate_backend(pid: int) -> None:
    """``pg_terminate_backend(pid)`` from another session (another thread's connection)."""
    answers: list[bool] = []

    def terminate() -> None:
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute("select pg_terminate_backend(%s)", [pid])
                answers.append(bool(cursor.fetchone()[0]))
        finally:
            connections["default"].close()

    thread = threading.Thread(target=terminate)
    thread.start()
    thread.join(10)
    assert answers == [True]


def listener_pids() -> list[int]:
    """The backends of this database's wake listeners."""
    with connection.cursor() as cursor:
        cursor.execute(
            "select pid from pg_stat_activity"
            " where application_name = %s and datname = current_database()",
            [LISTEN_APPLICATION_NAME],
        )
        return [row[0] for row in cursor.fetchall()]


def fill_queued(rows: int, name: str = "tests.noop") -> None:
    """``rows`` queued jobs of ``name`` in one statement, due one second apart in the past
    (oldest first), then fresh statistics of x_jobs."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            insert into x_jobs (id, name, queue, priority, run_at, input)
            select gen_random_uuid(), %(name)s, 'default', 0,
                   now() - make_interval(secs => g), '{}'::jsonb
            from generate_series(1, %(rows)s) as g
            """,
            {"rows": rows, "name": name},
        )
        cursor.execute("analyze x_jobs")
