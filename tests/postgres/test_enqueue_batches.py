"""A batch whose jobs share every column but id, input and tenant (one ``enqueue_many`` call's)
is written by ``job_enqueue_shared``; any other (the relay's) by ``job_enqueue_many``. Both
answer the same: created in order, deduped by id or by live key, woken once per queue."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection

from tests.drivers.support import request
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def statements() -> Iterator[list[str]]:
    seen: list[str] = []

    def watch(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        yield seen


def _stored(ids) -> list[tuple[str, str, int, str | None]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "select name, queue, priority, tenant_id from x_jobs where id = any(%s) order by id",
            [list(ids)],
        )
        return cursor.fetchall()


def test_one_calls_jobs_take_the_shared_statement(threshold) -> None:
    requests = [request(input_json=f'{{"n":{i}}}', tenant_id=f"t{i % 2}") for i in range(5)]
    with statements() as seen:
        results = PostgresDriver().job_enqueue_many(requests=requests)
    assert [(r.id, r.status) for r in results] == [(q.id, "created") for q in requests]
    assert len(seen) == 1 and "unnest(%(ids)s::uuid[], %(inputs)s::text[]" in seen[0]
    assert _stored(q.id for q in requests) == [
        ("tests.echo", "default", 0, f"t{i % 2}") for i in range(5)
    ]


def test_a_mixed_batch_takes_the_column_per_array_statement(threshold) -> None:
    requests = [request(priority=2), request(queue="other", name="tests.noop"), request()]
    with statements() as seen:
        results = PostgresDriver().job_enqueue_many(requests=requests)
    assert [(r.id, r.status) for r in results] == [(q.id, "created") for q in requests]
    assert len(seen) == 1 and "%(names)s::text[]" in seen[0]
    assert sorted(_stored(q.id for q in requests)) == [
        ("tests.echo", "default", 0, None),
        ("tests.echo", "default", 2, None),
        ("tests.noop", "other", 0, None),
    ]


@pytest.mark.parametrize("mixed", [False, True], ids=["shared", "mixed"])
def test_either_statement_dedupes_by_id_and_by_key(mixed: bool) -> None:
    driver = PostgresDriver()
    first = request(idempotency_key="k")
    [created] = driver.job_enqueue_many(requests=[first])
    again = request(idempotency_key="k", priority=1 if mixed else 0)
    batch = [request(idempotency_key="k"), again, request(id=first.id, idempotency_key="k")]
    answers = driver.job_enqueue_many(requests=batch)
    assert created.status == "created"
    assert [(a.id, a.status) for a in answers] == [(first.id, "deduped")] * 3
