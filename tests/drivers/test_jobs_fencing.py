"""Fencing: ack, nack, heartbeat and progress land only for the running attempt's claim token."""

from __future__ import annotations

import logging
import uuid

import pytest

from tests.drivers.support import (
    FENCED_WRITES,
    ack,
    claim_one,
    enqueue,
    get,
    heartbeat,
    progress,
    rescue,
    state_of,
)
from ultimat3_jobs.types import JobState


@pytest.fixture(params=list(FENCED_WRITES))
def write(request):
    return FENCED_WRITES[request.param]


def _running(driver):
    job_id = enqueue(driver)
    job = claim_one(driver)
    assert job.id == job_id
    return job


def _reclaimed_after_lost_lease(driver, store, job):
    """The stale-worker story: the lease ends, the rescuer takes the job back, a second worker
    claims it."""
    store.expire_lease(job.id)
    assert [rescued.id for rescued in rescue(driver)] == [job.id]
    store.make_due(job.id)
    second = claim_one(driver, worker_id="worker-2")
    assert (second.id, second.attempt) == (job.id, 2)
    return second


def test_job_fencing_wrong_token_does_not_land(driver, write):
    job = _running(driver)
    before = get(driver, job.id)
    assert write(driver, job.id, uuid.uuid4()) is False
    assert get(driver, job.id) == before
    assert write(driver, job.id, job.claim_token) is True


def test_job_fencing_unknown_id_does_not_land(driver, store, write):
    job = _running(driver)
    before = get(driver, job.id)
    assert write(driver, uuid.uuid4(), job.claim_token) is False
    assert get(driver, job.id) == before
    assert store.row_count() == 1


def test_job_fencing_token_of_other_job_does_not_land(driver, write):
    first, second = _running(driver), _running(driver)
    before = get(driver, first.id)
    assert write(driver, first.id, second.claim_token) is False
    assert get(driver, first.id) == before


def test_job_fencing_stale_worker_refused_after_reclaim(driver, store, write):
    first = _running(driver)
    second = _reclaimed_after_lost_lease(driver, store, first)
    before = get(driver, first.id)
    assert before.worker_id == "worker-2"
    assert write(driver, first.id, first.claim_token) is False
    assert get(driver, first.id) == before
    assert write(driver, second.id, second.claim_token) is True


def test_job_fencing_stale_worker_refused_while_requeued(driver, store, write):
    job = _running(driver)
    store.expire_lease(job.id)
    assert [rescued.id for rescued in rescue(driver)] == [job.id]
    before = get(driver, job.id)
    assert write(driver, job.id, job.claim_token) is False
    assert get(driver, job.id) == before


def test_job_fencing_cancelled_job_refuses(driver, write):
    job = _running(driver)
    assert driver.job_cancel(job_id=job.id) is True
    before = get(driver, job.id)
    assert write(driver, job.id, job.claim_token) is False
    assert get(driver, job.id) == before
    assert before.state == JobState.CANCELLED


def test_job_fencing_completed_job_refuses(driver, write):
    job = _running(driver)
    assert ack(driver, job.id, job.claim_token, '{"done":true}')
    before = get(driver, job.id)
    assert write(driver, job.id, job.claim_token) is False
    assert get(driver, job.id) == before
    assert (before.state, before.result) == (JobState.COMPLETED, {"done": True})


def test_job_fencing_stale_worker_refused_on_every_write(driver, store):
    first = _running(driver)
    second = _reclaimed_after_lost_lease(driver, store, first)
    stale = first.claim_token
    assert not ack(driver, first.id, stale, '"stale"')
    assert not heartbeat(driver, first.id, stale)
    assert not progress(driver, first.id, stale)
    assert heartbeat(driver, second.id, second.claim_token)
    assert progress(driver, second.id, second.claim_token)
    assert ack(driver, second.id, second.claim_token, '"fresh"')
    record = get(driver, first.id)
    assert (record.state, record.result, record.progress) == (
        JobState.COMPLETED,
        "fresh",
        {"done": 7},
    )


def test_job_fencing_miss_logs_unowned(driver, write, caplog):
    job = _running(driver)
    token = uuid.uuid4()
    with caplog.at_level(logging.INFO, logger="ultimat3_jobs.settle"):
        assert write(driver, job.id, token) is False
    events = [
        record
        for record in caplog.records
        if getattr(record, "event", None) == "jobs.settle.unowned"
    ]
    assert [getattr(record, "job_id", None) for record in events] == [str(job.id)]
    assert str(token) in events[0].getMessage()
    assert state_of(driver, job.id) == JobState.RUNNING
