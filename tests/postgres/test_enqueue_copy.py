"""A call of more than one chunk of jobs due now, minted and keyless, is written by one COPY
(``job_enqueue_copy``) after one read of the pause flag (``job_copy_paused``), in one
transaction: no executor per row. The rows stored are those the INSERT stores, text escaped
for COPY's text format included; the pause flag, the caller's transaction, a refused batch
and the other batches (delayed, one chunk, keyed) keep their statements."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction

from tests.testapp.jobs import echo
from ultimat3_jobs.drivers.base import ENQUEUE_CHUNK
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.errors import JobInputInvalid
from ultimat3_jobs.models import Job

from .test_enqueue_batches import statements

pytestmark = pytest.mark.django_db(transaction=True)

MANY = ENQUEUE_CHUNK + 5


def _copied(seen: list[str]) -> bool:
    return any("job_copy_paused" in sql or "copy_names" in sql for sql in seen)


def _rows(ids: list[uuid.UUID]) -> list[tuple[Any, ...]]:
    """Each job's stored columns, in the order of ``ids`` (``run_at == created_at`` last)."""
    columns = ("id", "name", "queue", "priority", "input", "tenant_id", "enqueued_by")
    more = ("max_attempts", "paused", "state", "run_at", "created_at")
    by_id = {row[0]: row for row in Job.objects.filter(id__in=ids).values_list(*columns, *more)}
    return [(*by_id[i][:-2], by_id[i][-2] == by_id[i][-1]) for i in ids if i in by_id]


AWKWARD = [
    {"path": "C:\\temp\\new", "tab": "a\tb", "lines": "one\ntwo\r\n", "quote": '"q"'},
    {"text": "\\N", "slash": "\\\\.", "unicode": "é中😀", "nested": {"a": [1, "\\t"]}},
    {},
]


def test_a_call_of_several_chunks_is_one_copy_storing_every_input_as_given() -> None:
    inputs = [AWKWARD[n % len(AWKWARD)] | {"n": n} for n in range(MANY)]
    with statements() as seen:
        results = echo.using(enqueued_by="user:\t\\7").enqueue_many(inputs)
    assert _copied(seen), seen
    assert not any("minted_rows" in sql for sql in seen), "the INSERT ran too"
    assert [r.status for r in results] == ["created"] * MANY
    rows = _rows([r.id for r in results])
    assert [row[4] for row in rows] == inputs
    assert {row[1:4] + row[5:] for row in rows} == {
        ("tests.echo", "default", 0, None, "user:\t\\7", 4, False, "queued", True)
    }
    # A delayed call keeps the INSERT (run_at is the database's now() plus the delay), and so
    # does a call of one chunk (one statement, no pause read before it).
    for call, size in ((echo.using(delay=timedelta(seconds=30)), MANY), (echo, ENQUEUE_CHUNK)):
        with statements() as seen:
            assert len(call.enqueue_many([{"n": n} for n in range(size)])) == size
        assert not _copied(seen), seen
        assert any("minted_rows" in sql for sql in seen), seen


def test_a_copy_keeps_the_enqueuers_tenant_on_every_row() -> None:
    with statements() as seen:
        results = echo.using(tenant="acme").enqueue_many([{"n": n} for n in range(MANY)])
    assert _copied(seen), seen
    assert {row[5] for row in _rows([r.id for r in results])} == {"acme"}


def test_a_paused_names_copied_jobs_are_flagged_paused() -> None:
    driver = PostgresDriver()
    assert driver.pause_add(scope="job", target="tests.echo")
    with statements() as seen:
        results = echo.enqueue_many([{"n": n} for n in range(MANY)])
    assert _copied(seen), seen
    assert {row[8] for row in _rows([r.id for r in results])} == {True}
    assert driver.pause_remove(scope="job", target="tests.echo")  # and unflags them
    assert {row[8] for row in _rows([r.id for r in results])} == {False}


def test_a_copy_rolled_back_with_its_transaction_leaves_no_row() -> None:
    with statements() as seen, transaction.atomic():
        results = echo.enqueue_many([{"n": n} for n in range(MANY)])
        assert len(_rows([r.id for r in results])) == MANY
        transaction.set_rollback(True)
    assert _copied(seen), seen
    assert _rows([r.id for r in results]) == []


def test_a_refused_copy_batch_leaves_the_callers_transaction_usable() -> None:
    with statements() as seen, transaction.atomic():
        results = echo.enqueue_many([{"n": n} for n in range(MANY)])
        with pytest.raises(JobInputInvalid):
            echo.enqueue_many([{"n": 1}] * MANY + [{"bad": {1, 2}}])
        assert len(_rows([r.id for r in results])) == MANY
    assert _copied(seen), seen
    assert len(_rows([r.id for r in results])) == MANY
