"""The claim commits without waiting for PostgreSQL's WAL flush (``synchronous_commit`` off for
its own transaction alone): a database crash before the flush forgets the claim, and the job,
still ``queued``, is claimed again, as at-least-once execution allows. Every later synchronous
commit (the settle, the enqueue) flushes it."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from tests.drivers.support import enqueue
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

pytestmark = pytest.mark.django_db


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("show synchronous_commit")
        return cursor.fetchone()[0]


def test_a_claim_that_takes_a_job_lets_its_transaction_commit_before_the_flush() -> None:
    driver = PostgresDriver()
    job_id = enqueue(driver)
    with transaction.atomic():
        assert _synchronous_commit() == "on"
        claimed = driver.job_claim(queues=["default"], limit=1, worker_id="w", lease_seconds=30)
        assert [job.id for job in claimed] == [job_id]
        assert _synchronous_commit() == "off"
