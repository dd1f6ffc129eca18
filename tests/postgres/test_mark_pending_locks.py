"""``job_mark_pending_many``: a mark (pending true, several rows, from the maintenance thread)
never waits for a row another transaction holds, so it cannot close a lock cycle with a
statement that writes the same attempts in another order (a lease grant stamping their
``started_at`` deadlocked with it in the full-scale limits proof). A clear (pending false, from
the body's thread) waits for the row: it must land before the body starts."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection

from tests.drivers.support import request
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.types import ClaimedJob

pytestmark = pytest.mark.django_db(transaction=True)


def _claimed(driver: PostgresDriver, n: int) -> list[ClaimedJob]:
    driver.job_enqueue_many(requests=[request(input_json="{}") for _ in range(n)])
    return list(driver.job_claim(queues=["default"], limit=n, worker_id="w", lease_seconds=30))


def _pending() -> dict[str, bool]:
    with connection.cursor() as cursor:
        cursor.execute("select id::text, body_pending from x_jobs")
        return dict(cursor.fetchall())


def _dsn() -> str:
    settings = connection.settings_dict
    return psycopg.conninfo.make_conninfo(
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        dbname=settings["NAME"],
        user=settings["USER"] or None,
        password=settings["PASSWORD"] or None,
    )


def test_a_mark_skips_a_row_another_transaction_holds_and_marks_the_rest() -> None:
    driver = PostgresDriver()
    held, free = _claimed(driver, 2)
    with connection.cursor() as cursor:
        cursor.execute("set lock_timeout = '3s'")  # a mark that waits fails here, not hangs
    try:
        with psycopg.connect(_dsn()) as other:
            other.execute("select 1 from x_jobs where id = %s for update", [held.id])
            started = time.monotonic()
            marked = driver.job_mark_pending_many(
                attempts=[(held.id, held.claim_token), (free.id, free.claim_token)], pending=True
            )
            waited = time.monotonic() - started
            other.rollback()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("reset lock_timeout")
    assert marked == {free.id}
    assert waited < 5.0, f"the mark waited {waited:.1f} s for a row lock"
    assert _pending() == {str(held.id): False, str(free.id): True}


def test_a_clear_waits_for_the_row_and_lands() -> None:
    driver = PostgresDriver()
    [job] = _claimed(driver, 1)
    assert driver.job_mark_pending_many(attempts=[(job.id, job.claim_token)], pending=True) == {
        job.id
    }
    cleared: list[set] = []
    with psycopg.connect(_dsn()) as other:
        other.execute("select 1 from x_jobs where id = %s for update", [job.id])

        def clear() -> None:
            cleared.append(
                PostgresDriver().job_mark_pending_many(
                    attempts=[(job.id, job.claim_token)], pending=False
                )
            )
            connection.close()

        thread = threading.Thread(target=clear)
        thread.start()
        thread.join(0.5)
        assert thread.is_alive(), "the clear did not wait for the row lock"
        other.rollback()
    thread.join(10)
    assert cleared == [{job.id}]
    assert _pending() == {str(job.id): False}
