"""A request batch is a sequence of the requests its columns describe: indexed, sliced and
iterated, it answers the same requests a list of them would."""

from __future__ import annotations

import pytest

from ultimat3_jobs.batches import RequestBatch, SharedColumns
from ultimat3_jobs.types import EnqueueRequest, new_job_ids

SHARED = SharedColumns(
    name="tests.echo",
    queue="default",
    priority=3,
    run_at=None,
    delay_seconds=5.0,
    idempotency_key=None,
    on_conflict="dedupe",
    max_attempts=4,
    lease_seconds=60,
    enqueued_by="me",
    traceparent=None,
)


def _expected(ids, inputs, tenants) -> list[EnqueueRequest]:
    return [
        EnqueueRequest(
            id=job_id,
            name="tests.echo",
            queue="default",
            input_json=text,
            priority=3,
            delay_seconds=5.0,
            max_attempts=4,
            lease_seconds=60,
            tenant_id=tenant,
            enqueued_by="me",
        )
        for job_id, text, tenant in zip(ids, inputs, tenants, strict=True)
    ]


def test_a_batch_answers_the_requests_of_its_columns() -> None:
    ids = new_job_ids(4)
    inputs = ['{"n":1}', '{"n":2}', "{}", '{"n":4}']
    tenants = ["a", None, "b", "a"]
    batch = RequestBatch(SHARED, ids, inputs, tenants)
    expected = _expected(ids, inputs, tenants)
    assert len(batch) == 4
    assert list(batch) == expected
    assert [batch[i] for i in range(-4, 4)] == expected + expected
    part = batch[1:3]
    assert isinstance(part, RequestBatch) and list(part) == expected[1:3]
    assert part.ids == ids[1:3] and part.shared is SHARED
    assert list(batch[4:]) == []


def test_a_batch_needs_one_id_input_and_tenant_per_job() -> None:
    with pytest.raises(ValueError, match="one id, one input and one tenant"):
        RequestBatch(SHARED, new_job_ids(2), ["{}"], [None, None])


def test_a_batch_builds_each_request_once() -> None:
    batch = RequestBatch(SHARED, new_job_ids(3), ["{}"] * 3, [None] * 3)
    first = list(batch)
    assert list(batch) == first and all(a is b for a, b in zip(batch, first, strict=True))
    assert batch[1] is first[1] and batch[1:][0] is first[1]
