"""job_cancel keeps a reason and its author in the job's errors, on every driver."""

from __future__ import annotations

import pytest

from tests.drivers.support import claim_one, enqueue, get, put_in_state
from ultimat3_jobs.types import JobState


def test_a_reason_is_kept_as_an_errors_entry_of_the_attempt_it_ended(driver):
    job_id = enqueue(driver)
    job = claim_one(driver, worker_id="w-1")
    assert driver.job_cancel(job_id=job_id, reason="customer asked", cancelled_by="admin:ada")
    record = get(driver, job_id)
    assert record.state is JobState.CANCELLED
    [entry] = record.errors
    at = entry.pop("at")
    assert isinstance(at, str) and at
    assert entry == {
        "attempt": job.attempt,
        "error_class": "ultimat3_jobs.Cancelled",
        "message": "customer asked",
        "traceback": "",
        "worker_id": "w-1",
        "cancelled_by": "admin:ada",
    }


def test_a_queued_job_keeps_its_reason_with_attempt_0_and_no_author(driver):
    job_id = enqueue(driver)
    assert driver.job_cancel(job_id=job_id, reason="not needed any more")
    [entry] = get(driver, job_id).errors
    assert (entry["attempt"], entry["message"], entry["cancelled_by"], entry["worker_id"]) == (
        0,
        "not needed any more",
        None,
        None,
    )


def test_no_reason_and_no_author_leaves_the_errors_as_they_were(driver):
    job_id = enqueue(driver)
    assert driver.job_cancel(job_id=job_id)
    assert get(driver, job_id).errors == []


@pytest.mark.parametrize("state", ["completed", "failed", "cancelled"])
def test_a_cancel_that_misses_keeps_no_reason(driver, state):
    job_id = enqueue(driver)
    put_in_state(driver, job_id, state)
    before = get(driver, job_id).errors
    assert driver.job_cancel(job_id=job_id, reason="too late", cancelled_by="cli:ops") is False
    assert get(driver, job_id).errors == before
