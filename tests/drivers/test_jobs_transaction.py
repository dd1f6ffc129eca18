"""Parity: an enqueue inside ``transaction.atomic()`` commits or rolls back with it, on every
driver. PostgreSQL writes the row in the transaction; the memory driver holds the job until the
commit (``transaction.on_commit``). These tests run inside the test case's own transaction, as a
project's tests do: its block stands for autocommit, and the commit of a block inside it is run
by ``django_capture_on_commit_callbacks(execute=True)``."""

from __future__ import annotations

import pytest
from django.db import transaction

from tests.drivers.support import enqueue, request, state_of
from ultimat3_jobs.types import JobState

# The memory driver's parameter needs the database too: the blocks are Django's.
pytestmark = pytest.mark.django_db


def test_outside_any_block_the_job_is_written_at_once(driver):
    job_id = enqueue(driver)
    assert state_of(driver, job_id) == JobState.QUEUED


@pytest.mark.parametrize("via", ["one", "many"])
def test_a_rolled_back_block_leaves_no_job(driver, via):
    req = request()
    with pytest.raises(RuntimeError), transaction.atomic():
        if via == "one":
            assert driver.job_enqueue(request=req).status == "created"
        else:
            assert [r.status for r in driver.job_enqueue_many(requests=[req])] == ["created"]
        raise RuntimeError("roll back")
    assert state_of(driver, req.id) is None


def test_a_committed_block_keeps_its_job(driver, django_capture_on_commit_callbacks):
    req = request()
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        driver.job_enqueue(request=req)
    assert state_of(driver, req.id) == JobState.QUEUED


def test_a_key_repeated_in_one_block_dedupes_to_the_first(
    driver, django_capture_on_commit_callbacks
):
    first, second = request(idempotency_key="k"), request(idempotency_key="k")
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        assert driver.job_enqueue(request=first).status == "created"
        answer = driver.job_enqueue(request=second)
    assert (answer.id, answer.status) == (first.id, "deduped")
    assert state_of(driver, first.id) == JobState.QUEUED
    assert state_of(driver, second.id) is None


def test_a_live_key_dedupes_inside_a_block(driver):
    live = enqueue(driver, idempotency_key="k")
    with transaction.atomic():
        answer = driver.job_enqueue(request=request(idempotency_key="k"))
    assert (answer.id, answer.status) == (live, "deduped")
