"""The hot statements are prepared on the connection when the alias asks for prepared
statements (``OPTIONS["prepare_threshold"]``), and only then; either way they run through
Django's cursor wrapper, so ``execute_wrapper`` hooks see them."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.drivers.support import enqueue
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.types import SettleItem

pytestmark = pytest.mark.django_db(transaction=True)


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("select statement from pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def test_the_hot_statements_are_prepared_only_when_the_alias_asks(threshold) -> None:
    driver = PostgresDriver()
    seen: list[str] = []

    def watch(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    for _ in range(2):
        enqueue(driver)
    with connection.execute_wrapper(watch):
        claimed = driver.job_claim(queues=["default"], limit=2, worker_id="w", lease_seconds=60)
        items = [
            SettleItem(job_id=job.id, claim_token=job.claim_token, action=action)
            for job, action in zip(claimed, ("complete", "retry"), strict=True)
        ]
        assert driver.job_settle_many(items=items) == {job.id for job in claimed}
    assert len(seen) == 2 and "update x_jobs j" in seen[0]
    prepared = _prepared()
    claim_prepared = any("claim_token = gen_random_uuid()" in text for text in prepared)
    settle_prepared = any("job_rows" not in text and "g.action" in text for text in prepared)
    assert (claim_prepared, settle_prepared) == ((True, True) if threshold else (False, False))
