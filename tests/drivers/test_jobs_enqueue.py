"""job_enqueue and job_enqueue_many: created or deduped, by id and by live idempotency key."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.drivers.support import (
    claim_ids,
    enqueue,
    get,
    put_in_state,
    request,
    state_of,
    utcnow,
)
from ultimat3_jobs.drivers.base import ENQUEUE_CHUNK
from ultimat3_jobs.types import EnqueueResult, JobState


def _enqueue_via(driver, via, req):
    if via == "one":
        return driver.job_enqueue(request=req)
    [result] = driver.job_enqueue_many(requests=[req])
    return result


VIA = pytest.mark.parametrize("via", ["one", "many"])


@VIA
def test_job_enqueue_created_stores_every_field(driver, via):
    req = request(
        priority=7,
        input_json='{"a":[1,2],"b":"x"}',
        idempotency_key="k-1",
        tenant_id="org-9",
        enqueued_by="alice",
        max_attempts=5,
    )
    assert _enqueue_via(driver, via, req) == EnqueueResult(req.id, "created")
    record = get(driver, req.id)
    assert (record.id, record.name, record.queue, record.state) == (
        req.id,
        "tests.echo",
        "default",
        JobState.QUEUED,
    )
    assert (record.priority, record.idempotency_key, record.tenant_id, record.enqueued_by) == (
        7,
        "k-1",
        "org-9",
        "alice",
    )
    assert record.input == {"a": [1, 2], "b": "x"}
    assert (record.attempt, record.max_attempts, record.errors) == (0, 5, [])
    assert (record.worker_id, record.lease_expires_at, record.result, record.progress) == (
        None,
        None,
        None,
        None,
    )
    assert (record.started_at, record.finished_at) == (None, None)


@VIA
@pytest.mark.parametrize("state", ["queued", "completed", "failed", "cancelled"])
def test_job_enqueue_same_id_is_deduped_with_that_id(driver, store, via, state):
    first = request(input_json='{"first":true}')
    driver.job_enqueue(request=first)
    put_in_state(driver, first.id, state)
    again = request(id=first.id, name="tests.noop", input_json='{"first":false}')
    assert _enqueue_via(driver, via, again) == EnqueueResult(first.id, "deduped")
    record = get(driver, first.id)
    assert (record.name, record.input, record.state) == ("tests.echo", {"first": True}, state)
    assert store.row_count() == 1


@VIA
@pytest.mark.parametrize("state", ["queued", "running"])
def test_job_enqueue_live_key_dedupes_to_live_id(driver, store, via, state):
    live = enqueue(driver, idempotency_key="order-1")
    put_in_state(driver, live, state)
    other = request(idempotency_key="order-1")
    assert _enqueue_via(driver, via, other) == EnqueueResult(live, "deduped")
    assert driver.job_get(job_id=other.id) is None
    assert store.row_count() == 1


@VIA
@pytest.mark.parametrize("state", ["completed", "failed", "cancelled"])
def test_job_enqueue_key_frees_once_job_finishes(driver, store, via, state):
    old = enqueue(driver, idempotency_key="order-2")
    put_in_state(driver, old, state)
    new = request(idempotency_key="order-2")
    assert _enqueue_via(driver, via, new) == EnqueueResult(new.id, "created")
    assert (state_of(driver, old), state_of(driver, new.id)) == (state, JobState.QUEUED)
    assert store.row_count() == 2


@VIA
def test_job_enqueue_same_key_other_name_is_created(driver, store, via):
    enqueue(driver, idempotency_key="shared")
    other = request(name="tests.noop", idempotency_key="shared")
    assert _enqueue_via(driver, via, other) == EnqueueResult(other.id, "created")
    assert store.row_count() == 2


def test_job_enqueue_without_key_never_dedupes(driver, store):
    for _ in range(3):
        enqueue(driver, input_json='{"same":1}')
    assert store.row_count() == 3


@VIA
@pytest.mark.parametrize(
    "timing",
    [
        pytest.param(lambda: {"run_at": utcnow() + timedelta(hours=2)}, id="run_at"),
        pytest.param(lambda: {"delay_seconds": 3600.0}, id="delay_seconds"),
    ],
)
def test_job_enqueue_future_job_not_claimed_until_due(driver, store, via, timing):
    req = request(**timing())
    assert _enqueue_via(driver, via, req).created
    assert claim_ids(driver) == []
    assert driver.queue_demand(queues=["default"]) == {"default": 0}
    assert state_of(driver, req.id) == JobState.QUEUED
    store.make_due(req.id)
    assert claim_ids(driver) == [req.id]


def test_job_enqueue_run_at_in_past_is_due_and_kept(driver):
    when = (utcnow() - timedelta(minutes=5)).replace(microsecond=123456)
    job_id = enqueue(driver, run_at=when)
    assert get(driver, job_id).run_at == when
    assert claim_ids(driver) == [job_id]


def test_job_enqueue_many_empty_answers_nothing(driver, store):
    assert driver.job_enqueue_many(requests=[]) == []
    assert store.row_count() == 0


def test_job_enqueue_many_answers_in_order(driver):
    reqs = [request(input_json=f'{{"i":{i}}}') for i in range(6)]
    reqs.reverse()
    results = driver.job_enqueue_many(requests=reqs)
    assert results == [EnqueueResult(req.id, "created") for req in reqs]
    assert [get(driver, req.id).input for req in reqs] == [{"i": i} for i in range(5, -1, -1)]


def test_job_enqueue_many_dedupes_key_repeated_in_batch_to_first(driver, store):
    first = request(idempotency_key="dup", input_json='{"which":"first"}')
    plain = request()
    second = request(idempotency_key="dup", input_json='{"which":"second"}')
    results = driver.job_enqueue_many(requests=[first, plain, second])
    assert results == [
        EnqueueResult(first.id, "created"),
        EnqueueResult(plain.id, "created"),
        EnqueueResult(first.id, "deduped"),
    ]
    assert get(driver, first.id).input == {"which": "first"}
    assert driver.job_get(job_id=second.id) is None
    assert store.row_count() == 2


def test_job_enqueue_many_mixes_created_and_deduped(driver, store):
    holder = enqueue(driver, idempotency_key="held")
    existing = enqueue(driver)
    fresh_a, fresh_b = request(), request(idempotency_key="free")
    batch = [fresh_a, request(id=existing), request(idempotency_key="held"), fresh_b]
    assert driver.job_enqueue_many(requests=batch) == [
        EnqueueResult(fresh_a.id, "created"),
        EnqueueResult(existing, "deduped"),
        EnqueueResult(holder, "deduped"),
        EnqueueResult(fresh_b.id, "created"),
    ]
    assert store.row_count() == 4


def test_job_enqueue_many_over_chunk_size_all_created(driver, store):
    reqs = [request(input_json=f'{{"i":{i}}}') for i in range(2345)]
    results = driver.job_enqueue_many(requests=reqs)
    assert results == [EnqueueResult(req.id, "created") for req in reqs]
    assert store.row_count() == 2345
    assert get(driver, reqs[-1].id).input == {"i": 2344}


def test_job_enqueue_many_key_repeated_across_chunks_dedupes_to_first(driver, store):
    reqs = [request() for _ in range(ENQUEUE_CHUNK + 5)]
    reqs[3] = request(idempotency_key="span")
    reqs[ENQUEUE_CHUNK + 2] = request(idempotency_key="span")
    results = driver.job_enqueue_many(requests=reqs)
    assert results[ENQUEUE_CHUNK + 2] == EnqueueResult(reqs[3].id, "deduped")
    assert sum(result.created for result in results) == ENQUEUE_CHUNK + 4
    assert store.row_count() == ENQUEUE_CHUNK + 4
