"""job_promote, job_remove and job_requeue_failed: what an operator changes."""

from __future__ import annotations

import uuid

import pytest

from tests.drivers.support import (
    about,
    claim_ids,
    claim_one,
    counters,
    enqueue,
    get,
    put_in_state,
    request,
    seconds_between,
    state_of,
    utcnow,
    wakes_of,
)
from ultimat3_jobs.types import BulkResult, JobState

NOT_QUEUED = ["running", "completed", "failed", "cancelled"]


def failed_job(driver, **overrides) -> uuid.UUID:
    job_id = enqueue(driver, **overrides)
    put_in_state(driver, job_id, "failed")
    return job_id


# -- job_promote ----------------------------------------------------------------------------


def test_job_promote_makes_a_future_job_due_now(driver, store):
    job_id = enqueue(driver)
    store.make_future(job_id, 3600)
    assert claim_ids(driver) == []
    assert driver.job_promote(job_id=job_id) is True
    record = get(driver, job_id)
    assert record.state is JobState.QUEUED
    assert about(0, seconds_between(utcnow(), record.run_at), tolerance=30)
    assert claim_ids(driver) == [job_id]


def test_job_promote_leaves_a_due_job_in_its_place(driver, store):
    job_id = enqueue(driver)
    store.make_due(job_id)
    before = get(driver, job_id)
    assert driver.job_promote(job_id=job_id) is False
    assert get(driver, job_id) == before


@pytest.mark.parametrize("state", NOT_QUEUED)
def test_job_promote_answers_false_unless_queued(driver, store, state):
    job_id = enqueue(driver)
    put_in_state(driver, job_id, state)
    store.make_future(job_id, 3600)
    before = get(driver, job_id)
    assert driver.job_promote(job_id=job_id) is False
    assert get(driver, job_id) == before


def test_job_promote_missing_job_answers_false(driver):
    assert driver.job_promote(job_id=uuid.uuid4()) is False


def test_job_promote_keeps_claim_order_by_priority(driver, store):
    low = enqueue(driver, priority=-5)
    high = enqueue(driver, priority=5)
    store.make_future(high, 3600)
    assert driver.job_promote(job_id=high)
    assert claim_ids(driver, limit=2) == [high, low]


def test_job_promote_wakes_the_queue(driver, store):
    if driver.name == "postgres":
        pytest.skip(
            "PostgreSQL wakes are delivered at commit: tests/operator/test_verbs.py covers NOTIFY"
        )
    job_id = enqueue(driver, queue="emails")
    store.make_future(job_id, 3600)
    with wakes_of(driver) as woken:
        assert driver.job_promote(job_id=job_id)
        assert driver.job_promote(job_id=job_id) is False
    assert woken == ["emails"]


# -- job_remove -----------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["queued", "completed", "failed", "cancelled"])
def test_job_remove_deletes_a_job_that_is_not_running(driver, store, state):
    job_id = enqueue(driver)
    put_in_state(driver, job_id, state)
    moved = store.counters("tests.echo")
    assert driver.job_remove(job_id=job_id) is True
    assert driver.job_get(job_id=job_id) is None
    assert store.row_count() == 0
    assert store.counters("tests.echo") == moved
    assert driver.job_remove(job_id=job_id) is False


def test_job_remove_refuses_a_running_job(driver, store):
    job_id = enqueue(driver)
    job = claim_one(driver)
    before = get(driver, job_id)
    assert driver.job_remove(job_id=job_id) is False
    assert get(driver, job_id) == before
    beat = driver.job_heartbeat_many(attempts=[(job_id, job.claim_token)], lease_seconds=30)
    assert beat.renewed == {job_id}


def test_job_remove_missing_job_answers_false(driver):
    assert driver.job_remove(job_id=uuid.uuid4()) is False


def test_job_remove_queued_job_is_never_claimed_and_frees_its_key(driver):
    removed = enqueue(driver, idempotency_key="order-1")
    kept = enqueue(driver)
    assert driver.job_remove(job_id=removed)
    assert claim_ids(driver) == [kept]
    again = driver.job_enqueue(request=request(idempotency_key="order-1"))
    assert again.created


# -- job_requeue_failed ---------------------------------------------------------------------


def test_job_requeue_failed_requeues_every_failed_job_of_the_name(driver, store):
    failed = [failed_job(driver) for _ in range(3)]
    other = failed_job(driver, name="tests.add", queue="math")
    completed = enqueue(driver)
    put_in_state(driver, completed, "completed")
    store.make_future(failed[0], 3600)
    before = {job_id: get(driver, job_id) for job_id in failed}
    moved = store.counters("tests.echo")

    assert driver.job_requeue_failed(name="tests.echo", limit=100) == BulkResult(3, 0)
    for job_id in failed:
        record = get(driver, job_id)
        assert (record.state, record.attempt, record.finished_at) == (JobState.QUEUED, 0, None)
        assert record.errors == before[job_id].errors
        assert (record.result, record.progress, record.worker_id) == (None, None, None)
    assert state_of(driver, other) is JobState.FAILED
    assert state_of(driver, completed) is JobState.COMPLETED
    assert store.counters("tests.echo") == moved
    # Due now, the one that had a future run_at included.
    assert sorted(claim_ids(driver)) == sorted(failed)


def test_job_requeue_failed_takes_the_oldest_first_up_to_limit(driver):
    failed = [failed_job(driver) for _ in range(5)]
    assert driver.job_requeue_failed(name="tests.echo", limit=2) == BulkResult(2, 3)
    assert [state_of(driver, job_id) for job_id in failed] == [JobState.QUEUED] * 2 + [
        JobState.FAILED
    ] * 3
    assert driver.job_requeue_failed(name="tests.echo", limit=2) == BulkResult(2, 1)
    assert driver.job_requeue_failed(name="tests.echo", limit=2) == BulkResult(1, 0)
    assert driver.job_requeue_failed(name="tests.echo", limit=2) == BulkResult(0, 0)


def test_job_requeue_failed_limit_zero_moves_nothing(driver):
    failed_job(driver)
    assert driver.job_requeue_failed(name="tests.echo", limit=0) == BulkResult(0, 1)


def test_job_requeue_failed_unknown_name_moves_nothing(driver):
    failed_job(driver)
    assert driver.job_requeue_failed(name="tests.nobody", limit=10) == BulkResult(0, 0)


def test_job_requeue_failed_skips_a_job_whose_key_a_live_job_holds(driver):
    held = failed_job(driver, idempotency_key="invoice-1")
    free = failed_job(driver, idempotency_key="invoice-2")
    plain = failed_job(driver)
    holder = enqueue(driver, idempotency_key="invoice-1")
    # The held row is skipped before the limit: two slots are enough for the two others.
    assert driver.job_requeue_failed(name="tests.echo", limit=2) == BulkResult(2, 1)
    assert state_of(driver, held) is JobState.FAILED
    assert state_of(driver, free) is JobState.QUEUED
    assert state_of(driver, plain) is JobState.QUEUED
    assert state_of(driver, holder) is JobState.QUEUED
    put_in_state(driver, free, "cancelled")
    put_in_state(driver, plain, "cancelled")
    driver.job_cancel(job_id=holder)
    assert driver.job_requeue_failed(name="tests.echo", limit=10) == BulkResult(1, 0)
    assert state_of(driver, held) is JobState.QUEUED


def test_job_requeue_failed_takes_only_the_newest_of_failed_jobs_sharing_a_key(driver):
    older = failed_job(driver, idempotency_key="report-9")
    newer = failed_job(driver, idempotency_key="report-9")
    assert driver.job_requeue_failed(name="tests.echo", limit=10) == BulkResult(1, 1)
    assert (state_of(driver, older), state_of(driver, newer)) == (
        JobState.FAILED,
        JobState.QUEUED,
    )
    # The requeued one now holds the key: the older one stays failed.
    assert driver.job_requeue_failed(name="tests.echo", limit=10) == BulkResult(0, 1)
    assert driver.job_enqueue(request=request(idempotency_key="report-9")).id == newer


def test_job_requeue_failed_wakes_each_queue_once(driver):
    if driver.name == "postgres":
        pytest.skip(
            "PostgreSQL wakes are delivered at commit: tests/operator/test_verbs.py covers NOTIFY"
        )
    failed_job(driver, queue="emails")
    failed_job(driver, queue="emails")
    failed_job(driver, queue="math")
    with wakes_of(driver) as woken:
        assert driver.job_requeue_failed(name="tests.echo", limit=10) == BulkResult(3, 0)
        assert driver.job_requeue_failed(name="tests.echo", limit=10) == BulkResult(0, 0)
    assert sorted(woken) == ["emails", "math"]


def test_job_requeue_failed_counts_nothing(driver, store):
    failed_job(driver)
    moved = store.counters("tests.echo")
    assert moved == counters(dead=1)
    driver.job_requeue_failed(name="tests.echo", limit=10)
    assert store.counters("tests.echo") == moved
