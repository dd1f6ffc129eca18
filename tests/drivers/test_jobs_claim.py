"""job_claim: which due jobs, in which order, and what a claim writes."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from tests.drivers.support import (
    HOUR,
    about,
    claim,
    claim_ids,
    claim_one,
    enqueue,
    get,
    nack,
    put_in_state,
    seconds_between,
    state_of,
    utcnow,
)
from ultimat3_jobs.errors import JobClaimQueuesEmpty
from ultimat3_jobs.types import JobState


def _enqueue_ranked(driver, specs, queue="default"):
    """Enqueue due jobs from ``(priority, minutes after an hour ago)``; answer their ids."""
    base = utcnow() - HOUR
    return [
        enqueue(driver, queue=queue, priority=priority, run_at=base + timedelta(minutes=minutes))
        for priority, minutes in specs
    ]


def _drain(driver, queues, limit):
    order: list[uuid.UUID] = []
    while batch := claim(driver, queues, limit=limit):
        assert len(batch) <= limit
        order.extend(job.id for job in batch)
    return order


def test_job_claim_marks_running_and_answers_the_attempt(driver):
    job_id = enqueue(
        driver,
        input_json='{"x":[1,{"y":null}]}',
        priority=4,
        tenant_id="org-1",
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        max_attempts=6,
    )
    job = claim_one(driver, worker_id="w-claim")
    assert (job.id, job.name, job.queue, job.input) == (
        job_id,
        "tests.echo",
        "default",
        {"x": [1, {"y": None}]},
    )
    assert (job.attempt, job.max_attempts, job.priority, job.tenant_id) == (1, 6, 4, "org-1")
    assert job.traceparent == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    record = get(driver, job_id)
    assert (record.state, record.attempt, record.worker_id) == (JobState.RUNNING, 1, "w-claim")
    assert record.lease_expires_at is not None
    assert record.started_at is not None
    assert record.finished_at is None


@pytest.mark.parametrize("limit", [1, 2, 10])
def test_job_claim_orders_by_priority_then_run_at(driver, limit):
    a, b, c, d, e = _enqueue_ranked(driver, [(0, 30), (5, 20), (5, 10), (-3, 0), (0, 10)])
    assert _drain(driver, ["default"], limit) == [c, b, e, a, d]


def test_job_claim_merges_queues_in_claim_order(driver):
    a1, a2, a3 = _enqueue_ranked(driver, [(1, 5), (0, 1), (9, 40)], queue="alpha")
    b1, b2, b3 = _enqueue_ranked(driver, [(1, 3), (0, 2), (-1, 0)], queue="beta")
    first = claim(driver, ["alpha", "beta"], limit=3)
    assert [job.id for job in first] == [a3, b1, a1]
    assert [job.queue for job in first] == ["alpha", "beta", "alpha"]
    assert claim_ids(driver, ["beta", "alpha"], limit=10) == [a2, b2, b3]


def test_job_claim_respects_limit(driver):
    ids = [enqueue(driver) for _ in range(5)]
    first = claim_ids(driver, limit=2)
    second = claim_ids(driver, limit=10)
    assert (len(first), len(second)) == (2, 3)
    assert sorted(first + second) == sorted(ids)
    assert claim_ids(driver, limit=10) == []


def test_job_claim_limit_zero_claims_nothing(driver):
    job_id = enqueue(driver)
    assert claim(driver, limit=0) == []
    assert state_of(driver, job_id) == JobState.QUEUED
    assert get(driver, job_id).attempt == 0


def test_job_claim_skips_queues_not_named(driver):
    elsewhere = enqueue(driver, queue="other")
    here = enqueue(driver)
    assert claim_ids(driver, ["default", "third"]) == [here]
    assert state_of(driver, elsewhere) == JobState.QUEUED


def test_job_claim_repeated_queue_name_claims_each_job_once(driver):
    ids = _enqueue_ranked(driver, [(2, 0), (1, 0)])
    assert claim_ids(driver, ["default", "default"], limit=10) == ids


def test_job_claim_does_not_reclaim_running(driver):
    job = enqueue(driver)
    assert claim_ids(driver) == [job]
    assert claim_ids(driver) == []
    assert get(driver, job).attempt == 1


@pytest.mark.parametrize("state", ["completed", "failed", "cancelled"])
def test_job_claim_skips_finished_jobs(driver, store, state):
    job_id = enqueue(driver)
    put_in_state(driver, job_id, state)
    store.make_due(job_id)
    assert claim_ids(driver) == []
    assert state_of(driver, job_id) == state


@pytest.mark.parametrize("queues", [[], (), ""], ids=["list", "tuple", "str"])
def test_job_claim_without_queues_is_refused(driver, queues):
    job_id = enqueue(driver)
    with pytest.raises(JobClaimQueuesEmpty) as caught:
        claim(driver, queues)
    assert caught.value.code == "X_JOB_CLAIM_QUEUES_EMPTY"
    assert claim_ids(driver) == [job_id]


def test_job_claim_increments_attempt_and_mints_fresh_tokens(driver):
    job_id = enqueue(driver)
    tokens = []
    for expected_attempt in (1, 2, 3):
        job = claim_one(driver)
        assert (job.id, job.attempt) == (job_id, expected_attempt)
        tokens.append(job.claim_token)
        assert nack("retry")(driver, job.id, job.claim_token)
    assert len(set(tokens)) == 3


def test_job_claim_gives_each_job_its_own_token(driver):
    for _ in range(4):
        enqueue(driver)
    claimed = claim(driver, limit=4)
    assert len({job.claim_token for job in claimed}) == 4


def test_job_claim_lease_is_lease_seconds_past_start(driver):
    job_id = enqueue(driver)
    claim_one(driver, lease_seconds=45)
    record = get(driver, job_id)
    assert about(45, seconds_between(record.lease_expires_at, record.started_at))
    assert record.lease_expires_at > record.created_at


def test_job_claim_job_lease_seconds_overrides(driver):
    own = enqueue(driver, priority=1, lease_seconds=900)
    plain = enqueue(driver)
    first, second = claim(driver, limit=2, lease_seconds=30)
    assert (first.id, second.id) == (own, plain)
    own_row, plain_row = get(driver, own), get(driver, plain)
    assert about(870, seconds_between(own_row.lease_expires_at, plain_row.lease_expires_at))
    assert about(900, seconds_between(own_row.lease_expires_at, own_row.started_at))


def test_job_claim_walks_priority_levels_past_future_and_paused_rows(driver):
    later = utcnow() + HOUR
    for priority in (9, 7, 2):
        enqueue(driver, priority=priority, run_at=later)
    enqueue(driver, name="tests.held", priority=8)
    assert driver.pause_add(scope="job", target="tests.held")
    a, b, c, d = _enqueue_ranked(driver, [(7, 5), (3, 1), (7, 2), (-4, 0)])
    e, f = _enqueue_ranked(driver, [(8, 9), (2, 0)], queue="beta")
    assert claim_ids(driver, ["default", "beta"], limit=3) == [e, c, a]
    assert claim_ids(driver, ["beta", "default"], limit=2) == [b, f]
    assert claim_ids(driver, ["default", "beta"], limit=5) == [d]


@pytest.mark.parametrize("state", ["running", "completed", "failed"])
def test_put_in_state_claims_the_job_it_means_past_a_tied_one(driver, state):
    """Two due jobs of one queue tied in claim order (one priority, one ``run_at``, as two
    enqueues in one PostgreSQL transaction are): the helper still claims the one it is given,
    and leaves the other queued with its ``run_at`` as it was."""
    at = utcnow() - HOUR
    other, meant = enqueue(driver, run_at=at), enqueue(driver, run_at=at)
    job = put_in_state(driver, meant, state)
    assert job is not None and job.id == meant
    assert state_of(driver, meant) == state
    assert state_of(driver, other) == "queued"
    assert get(driver, meant).run_at == at and get(driver, other).run_at == at
