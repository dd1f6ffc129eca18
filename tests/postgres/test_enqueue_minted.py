"""One ``enqueue_many`` call's jobs carry ids the call minted and, with no idempotency key, can
conflict with no row: they take ``job_enqueue_minted``, one INSERT with no conflict clause (no
speculative insertion, no confirm record per row), read straight from the arrays (no copy of the
rows, no sort). Every other batch keeps ``ON CONFLICT DO NOTHING``. The guarantees stay: the
answers, the pause flag, the wake at commit (none on rollback), the caller's transaction."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from django.db import connection, transaction

from tests.testapp.jobs import echo
from ultimat3_jobs.batches import RequestBatch
from ultimat3_jobs.drivers.base import ENQUEUE_CHUNK
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.types import new_job_ids

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def sent() -> Iterator[list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []

    def watch(execute, sql, params, many, context):
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        yield seen


def _plan(sql: str, params: Any) -> str:
    """The plan of ``sql`` as it ran, executed and rolled back."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("explain (analyze, costs off, timing off, summary off) " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    return plan


def _stored(ids: list[uuid.UUID]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "select id, name, input::text, tenant_id, paused, state from x_jobs where id = any(%s)"
            " order by id",
            [ids],
        )
        return cursor.fetchall()


def test_a_calls_jobs_are_inserted_without_a_conflict_clause_copy_or_sort(threshold) -> None:
    with sent() as seen:
        results = echo.enqueue_many([{"n": n} for n in range(5)])
    assert len(seen) == 1
    sql, params = seen[0]
    assert "on conflict" not in sql.lower()
    plan = _plan(sql, {**params, "ids": [uuid.uuid4() for _ in range(5)]})
    assert "Conflict Resolution" not in plan, plan
    assert "Sort" not in plan, plan
    assert not re.search(r"CTE Scan on (job_rows|minted_rows|inserted)", plan), plan
    assert [r.status for r in results] == ["created"] * 5
    stored = _stored([r.id for r in results])
    assert [row[2] for row in stored] == [f'{{"n": {n}}}' for n in range(5)]


def test_the_minted_statement_answers_and_stores_as_the_deduping_one() -> None:
    results = echo.enqueue_many([{"n": n} for n in range(3)])
    ids = [r.id for r in results]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert _stored(ids) == [
        (job_id, "tests.echo", f'{{"n": {n}}}', None, False, "queued")
        for n, job_id in enumerate(ids)
    ]


def test_a_call_of_several_chunks_writes_them_all_in_one_transaction() -> None:
    results = echo.enqueue_many([{"n": n} for n in range(2 * ENQUEUE_CHUNK + 1)])
    assert [r.status for r in results] == ["created"] * (2 * ENQUEUE_CHUNK + 1)
    with connection.cursor() as cursor:
        cursor.execute("select count(*), count(distinct xmin::text) from x_jobs")
        assert cursor.fetchone() == (2 * ENQUEUE_CHUNK + 1, 1)


def test_a_paused_names_minted_jobs_are_flagged_paused() -> None:
    driver = PostgresDriver()
    assert driver.pause_add(scope="job", target="tests.echo")
    results = echo.enqueue_many([{"n": 1}, {"n": 2}])
    assert [row[4] for row in _stored([r.id for r in results])] == [True, True]
    assert driver.pause_remove(scope="job", target="tests.echo")


def test_a_minted_call_rolled_back_with_its_transaction_leaves_no_row() -> None:
    with transaction.atomic():
        results = echo.enqueue_many([{"n": 1}, {"n": 2}])
        assert len(_stored([r.id for r in results])) == 2
        transaction.set_rollback(True)
    assert _stored([r.id for r in results]) == []


def _shared_batch(*, key: str | None, minted: bool) -> RequestBatch:
    seen: list[RequestBatch] = []
    original = PostgresDriver.job_enqueue_many

    def keep(self: PostgresDriver, *, requests: Any) -> Any:
        seen.append(requests)
        return []

    PostgresDriver.job_enqueue_many = keep  # type: ignore[method-assign]
    try:
        echo.enqueue_many([{"n": 1}, {"n": 2}])
    finally:
        PostgresDriver.job_enqueue_many = original  # type: ignore[method-assign]
    (batch,) = seen
    shared = replace(batch.shared, idempotency_key=key)
    return RequestBatch(shared, new_job_ids(2), batch.inputs, batch.tenants, minted=minted)


@pytest.mark.parametrize("minted", [False, True], ids=["given-ids", "minted"])
def test_a_keyed_batch_keeps_deduping_whoever_minted_its_ids(minted: bool) -> None:
    driver = PostgresDriver()
    first = driver.job_enqueue_many(requests=_shared_batch(key="k", minted=minted))
    again = driver.job_enqueue_many(requests=_shared_batch(key="k", minted=minted))
    assert [r.status for r in first] == ["created", "deduped"]
    assert [r.status for r in again] == ["deduped", "deduped"]
    assert {r.id for r in again} == {first[0].id}


def test_a_batch_not_minted_by_its_call_keeps_deduping_by_id() -> None:
    driver = PostgresDriver()
    batch = _shared_batch(key=None, minted=False)
    first = driver.job_enqueue_many(requests=batch)
    again = driver.job_enqueue_many(requests=batch)  # a republished batch keeps its ids
    assert [r.status for r in first] == ["created", "created"]
    assert [(r.id, r.status) for r in again] == [(r.id, "deduped") for r in first]
