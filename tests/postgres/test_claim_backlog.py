"""Every claim of a deep backlog takes what it asks for, on its custom plans and after the plan
cache moves to a generic one (it compares five custom plans first): 8 claims of 90 from 100,000
and from 1,000,000 queued rows take 90 each. A prepared claim that kept the generic plan once
took no job at all at 1,000,000 (see job_claim in jobs.sql)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

pytestmark = pytest.mark.django_db(transaction=True)

CLAIMS = 8  # past the plan cache's five custom plans
LIMIT = 90


@pytest.fixture(autouse=True)
def _fresh_connection() -> Iterator[None]:
    """Each test connects anew (no statement prepared yet), and leaves no dead connection."""
    connection.close()
    yield
    connection.close()


def _fill(depth: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            insert into x_jobs (id, name, queue, input)
            select gen_random_uuid(), 'tests.noop', 'default', '{}'::jsonb
            from generate_series(1, %(depth)s)
            """,
            {"depth": depth},
        )
        cursor.execute("analyze x_jobs")


def _claims(depth: int) -> list[int]:
    _fill(depth)
    driver = PostgresDriver()
    try:
        return [
            len(driver.job_claim(queues=["default"], limit=LIMIT, worker_id="w", lease_seconds=60))
            for _ in range(CLAIMS)
        ]
    finally:
        driver.close()


def test_every_claim_of_a_backlog_of_100_000_takes_its_limit() -> None:
    assert _claims(100_000) == [LIMIT] * CLAIMS


@pytest.mark.slow
def test_every_claim_of_a_backlog_of_1_000_000_takes_its_limit() -> None:
    assert _claims(1_000_000) == [LIMIT] * CLAIMS
