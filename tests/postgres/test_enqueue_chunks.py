"""A batch of more than one chunk (``ENQUEUE_CHUNK`` requests per statement) is written whole or
not at all: its statements run in one transaction, sent one after the other without waiting
for each other's answer (pipelined), and a refusal in any chunk, by the database or before a
chunk is sent, leaves none of the batch behind. The refusal reaches the caller as the seam's
error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests.drivers.support import request
from ultimat3_jobs.drivers.base import ENQUEUE_CHUNK
from ultimat3_jobs.drivers.postgres import driver as driver_module
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.errors import StoreRefused
from ultimat3_jobs.types import EnqueueRequest

pytestmark = pytest.mark.django_db(transaction=True)

BATCH = 2 * ENQUEUE_CHUNK + 7
"""Three chunks, the last one short."""


@pytest.fixture
def refuse_marked() -> Iterator[None]:
    """A trigger refusing any job whose input holds ``refuse``: a database-side refusal."""
    with connection.cursor() as cursor:
        cursor.execute(
            "create function x_test_refuse() returns trigger language plpgsql as $$ "
            "begin raise exception 'refused by the test trigger'; end $$"
        )
        cursor.execute(
            "create trigger x_test_refuse before insert on x_jobs for each row "
            "when (new.input ? 'refuse') execute function x_test_refuse()"
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("drop trigger if exists x_test_refuse on x_jobs")
            cursor.execute("drop function if exists x_test_refuse()")


def _batch(*, mixed: bool = False) -> list[EnqueueRequest]:
    requests = [request(input_json=f'{{"n":{i}}}') for i in range(BATCH)]
    if mixed:  # one request of another priority: the column-per-array statement
        requests[1] = request(priority=3)
    return requests


def _row_count() -> int:
    with connection.cursor() as cursor:
        cursor.execute("select count(*) from x_jobs")
        return int(cursor.fetchone()[0])


def _writing_transactions() -> int:
    with connection.cursor() as cursor:
        cursor.execute("select count(distinct xmin::text) from x_jobs")
        return int(cursor.fetchone()[0])


@pytest.mark.parametrize("mixed", [False, True], ids=["shared", "mixed"])
@pytest.mark.parametrize("where", [-2, ENQUEUE_CHUNK + 3], ids=["last-chunk", "middle-chunk"])
def test_a_refusal_in_a_later_chunk_writes_nothing_of_the_batch(
    threshold: Any, refuse_marked: None, mixed: bool, where: int
) -> None:
    requests = _batch(mixed=mixed)
    requests[where] = request(input_json='{"refuse":true}')
    with pytest.raises(StoreRefused) as refused:
        PostgresDriver().job_enqueue_many(requests=requests)
    assert refused.value.sqlstate == "P0001"
    assert "refused by the test trigger" in refused.value.reason
    assert _row_count() == 0
    # The connection is usable again, in autocommit.
    [result] = PostgresDriver().job_enqueue_many(requests=[request()])
    assert result.status == "created" and _row_count() == 1


def test_a_failure_before_a_later_chunk_is_sent_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = driver_module.batch_statement
    calls: list[int] = []

    def third_fails(chunk: Any) -> Any:
        calls.append(len(chunk))
        if len(calls) == 3:
            raise RuntimeError("the third chunk cannot be built")
        return real(chunk)

    monkeypatch.setattr(driver_module, "batch_statement", third_fails)
    with pytest.raises(RuntimeError, match="third chunk"):
        PostgresDriver().job_enqueue_many(requests=_batch())
    assert calls == [ENQUEUE_CHUNK, ENQUEUE_CHUNK, 7]
    assert _row_count() == 0


@pytest.mark.parametrize("mixed", [False, True], ids=["shared", "mixed"])
def test_the_chunks_are_pipelined_in_one_transaction(threshold: Any, mixed: bool) -> None:
    pipelined: list[bool] = []

    def watch(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        status = connection.connection.pgconn.pipeline_status
        pipelined.append(status != psycopg.pq.PipelineStatus.OFF)
        return execute(sql, params, many, context)

    requests = _batch(mixed=mixed)
    with connection.execute_wrapper(watch):
        results = PostgresDriver().job_enqueue_many(requests=requests)
    assert [(r.id, r.status) for r in results] == [(q.id, "created") for q in requests]
    assert pipelined[:3] == [True, True, True]
    assert _row_count() == BATCH
    assert _writing_transactions() == 1
    assert connection.get_autocommit()
