"""job_settle_many: every ending of a settler's flush in one write, each landing as job_ack_many
or job_nack would land it, fenced by its claim token, its counters moved in the same write."""

from __future__ import annotations

import contextlib
import uuid

import pytest
from django.db import transaction

from tests.drivers.support import (
    LEASE,
    about,
    attempt_error,
    claim_ids,
    claim_one,
    counters,
    enqueue,
    get,
    seconds_between,
    state_of,
)
from ultimat3_jobs.errors import StoreRefused
from ultimat3_jobs.types import JobState, SettleItem


def _running(driver, **overrides):
    job_id = enqueue(driver, **overrides)
    job = claim_one(driver)
    assert job.id == job_id
    return job


def _item(job, action, **fields):
    return SettleItem(job_id=job.id, claim_token=job.claim_token, action=action, **fields)


def test_job_settle_many_empty_batch_lands_nothing(driver):
    assert driver.job_settle_many(items=[]) == set()


def test_job_settle_many_lands_every_ending_of_a_mixed_batch(driver, store):
    done, retried, dead, dropped = (_running(driver, name="tests.add") for _ in range(4))
    leased = get(driver, retried.id).lease_expires_at
    error = attempt_error(1, message="it broke: ü")
    items = [
        _item(done, "complete", result_json='{"sum":3}', progress_json='{"current":2}'),
        _item(retried, "retry", error=error, delay_seconds=600, progress_json='"half"'),
        _item(dead, "fail", error=error),
        _item(dropped, "drop", error=error),
    ]
    assert driver.job_settle_many(items=items) == {done.id, retried.id, dead.id, dropped.id}

    completed = get(driver, done.id)
    assert (completed.state, completed.result, completed.attempt) == (
        JobState.COMPLETED,
        {"sum": 3},
        1,
    )
    assert completed.progress == {"current": 2}
    assert completed.finished_at is not None and completed.lease_expires_at is None
    assert completed.errors == []

    again = get(driver, retried.id)
    assert (again.state, again.attempt, again.lease_expires_at) == (JobState.QUEUED, 1, None)
    assert about(600 - LEASE, seconds_between(again.run_at, leased))
    assert again.worker_id is None and again.finished_at is None
    assert again.progress == "half"
    assert [entry["message"] for entry in again.errors] == ["it broke: ü"]

    failed = get(driver, dead.id)
    assert (failed.state, failed.attempt) == (JobState.FAILED, 1)
    assert failed.finished_at is not None
    assert {key: failed.errors[0][key] for key in error.as_json()} == error.as_json()

    assert driver.job_get(job_id=dropped.id) is None
    assert claim_ids(driver) == []
    assert store.counters("tests.add") == counters(completed=1, retried=1, dead=1, dropped=1)


def test_job_settle_many_is_fenced_and_answers_only_landed_ids(driver, store):
    good, stale = _running(driver), _running(driver)
    missing = uuid.uuid4()
    items = [
        _item(good, "fail", error=attempt_error()),
        SettleItem(job_id=stale.id, claim_token=uuid.uuid4(), action="complete"),
        SettleItem(job_id=stale.id, claim_token=uuid.uuid4(), action="drop"),
        SettleItem(job_id=missing, claim_token=uuid.uuid4(), action="retry"),
    ]
    assert driver.job_settle_many(items=items) == {good.id}
    assert state_of(driver, good.id) == JobState.FAILED
    assert state_of(driver, stale.id) == JobState.RUNNING
    assert get(driver, stale.id).progress is None
    assert driver.job_get(job_id=missing) is None
    # Settled once: the same batch again lands nothing and moves no counter.
    assert driver.job_settle_many(items=items[:1]) == set()
    assert store.counters("tests.echo") == counters(dead=1)


@pytest.mark.parametrize(
    ("action", "state", "moved"),
    [
        ("retry", JobState.QUEUED, counters()),
        ("fail", JobState.FAILED, counters(refused=1)),
    ],
)
def test_job_settle_many_not_counted_gives_the_attempt_back(driver, store, action, state, moved):
    job = _running(driver, name="tests.add")
    item = _item(job, action, error=attempt_error(), counts_as_attempt=False)
    assert driver.job_settle_many(items=[item]) == {job.id}
    record = get(driver, job.id)
    assert (record.state, record.attempt) == (state, 0)
    assert store.counters("tests.add") == moved


def test_a_failure_storm_moves_each_counter_once_per_write(driver, store):
    jobs = [_running(driver, name="tests.add") for _ in range(20)]
    others = [_running(driver, name="tests.echo") for _ in range(3)]
    items = [_item(job, "retry", error=attempt_error(), delay_seconds=60) for job in jobs]
    items += [_item(job, "complete") for job in others]
    assert driver.job_settle_many(items=items) == {job.id for job in jobs + others}
    assert store.counters("tests.add") == counters(retried=20)
    assert store.counters("tests.echo") == counters(completed=3)
    if driver.name == "postgres":
        from ultimat3_jobs.models import JobCounter

        # One row per name and minute, written by the one statement.
        assert JobCounter.objects.filter(name="tests.add", period="minute").count() == 1


@pytest.mark.parametrize("what", ["result", "error"])
def test_job_settle_many_refused_value_lands_nothing(driver, what):
    """A value the store cannot hold refuses the whole write, nothing written, with the
    seam's ``StoreRefused``: the settler then splits the batch to isolate it."""
    job, other = _running(driver), _running(driver)
    before = [get(driver, job.id), get(driver, other.id)]
    refused = (
        _item(job, "complete", result_json='{"kept out": NaN}')
        if what == "result"
        else _item(job, "fail", error=attempt_error(1, error_class="app.nul \x00 inside"))
    )
    items = [_item(other, "complete", result_json="1"), refused]
    savepoint = transaction.atomic() if driver.name == "postgres" else contextlib.nullcontext()
    with pytest.raises(StoreRefused) as caught, savepoint:
        driver.job_settle_many(items=items)
    assert caught.value.code == "X_STORE_REFUSED"
    assert "kept out" not in str(caught.value)
    assert [get(driver, job.id), get(driver, other.id)] == before
