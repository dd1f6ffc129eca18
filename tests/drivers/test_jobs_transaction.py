"""Parity: an enqueue inside ``transaction.atomic()`` commits or rolls back with it, on every
driver. PostgreSQL writes the row in the transaction; the memory driver holds the job until the
commit (``transaction.on_commit``). These tests run inside the test case's own transaction, as a
project's tests do: its block stands for autocommit, and the commit of a block inside it is run
by ``django_capture_on_commit_callbacks(execute=True)``.

A driver that commits with no database (Redis: ``commits_with`` answers False) writes at once;
the enqueue path keeps the rule for it by staging the job in ``x_outbox`` (``route`` below,
and ``tests/outbox/test_redis_store.py`` end to end), so only the first test here is its."""

from __future__ import annotations

import pytest
from django.db import transaction

from tests.drivers.support import enqueue, request, state_of
from ultimat3_jobs.model.transactions import STAGE, STORE, route
from ultimat3_jobs.types import JobState

# The memory driver's parameter needs the database too: the blocks are Django's.
pytestmark = pytest.mark.django_db


def joins_transactions(driver) -> None:
    if not driver.commits_with("default"):
        pytest.skip(
            f"the {driver.name} driver commits with no database: the enqueue path stages an "
            "enqueue inside atomic() in x_outbox (test_the_enqueue_path_stages_for_a_store_"
            "that_commits_with_no_database)"
        )


def test_outside_any_block_the_job_is_written_at_once(driver):
    job_id = enqueue(driver)
    assert state_of(driver, job_id) == JobState.QUEUED


def test_the_enqueue_path_stages_for_a_store_that_commits_with_no_database(driver):
    with transaction.atomic():
        chosen = route(driver, publish="on-commit", outbox_database="default")
    assert chosen == (STORE if driver.commits_with("default") else STAGE)
    assert (driver.name == "redis") is (chosen == STAGE)


@pytest.mark.parametrize("via", ["one", "many"])
def test_a_rolled_back_block_leaves_no_job(driver, via):
    joins_transactions(driver)
    req = request()
    with pytest.raises(RuntimeError), transaction.atomic():
        if via == "one":
            assert driver.job_enqueue(request=req).status == "created"
        else:
            assert [r.status for r in driver.job_enqueue_many(requests=[req])] == ["created"]
        raise RuntimeError("roll back")
    assert state_of(driver, req.id) is None


def test_a_committed_block_keeps_its_job(driver, django_capture_on_commit_callbacks):
    joins_transactions(driver)
    req = request()
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        driver.job_enqueue(request=req)
    assert state_of(driver, req.id) == JobState.QUEUED


def test_a_key_repeated_in_one_block_dedupes_to_the_first(
    driver, django_capture_on_commit_callbacks
):
    joins_transactions(driver)
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
