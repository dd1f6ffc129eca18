"""job_ack_many and job_nack: how an attempt settles, what is kept, and the counters it moves."""

from __future__ import annotations

import contextlib
import uuid
from datetime import datetime

import pytest
from django.db import DatabaseError, transaction

from tests.drivers.support import (
    LEASE,
    about,
    ack,
    attempt_error,
    claim_ids,
    claim_one,
    counters,
    enqueue,
    get,
    nack,
    seconds_between,
    state_of,
)
from ultimat3_jobs.errors import StoreRefused
from ultimat3_jobs.types import AckItem, JobState

ERROR_KEYS = {"attempt", "error_class", "message", "traceback", "worker_id", "at"}


def _running(driver, **overrides):
    job_id = enqueue(driver, **overrides)
    job = claim_one(driver)
    assert job.id == job_id
    return job


def _stamp(entry):
    stamp = datetime.fromisoformat(entry["at"])
    assert stamp.utcoffset() is not None
    return stamp


def test_job_ack_many_completes_and_stores_result(driver):
    job = _running(driver)
    items = [AckItem(job_id=job.id, claim_token=job.claim_token, result_json='{"sum":3}')]
    assert driver.job_ack_many(items=items) == {job.id}
    record = get(driver, job.id)
    assert (record.state, record.result, record.attempt) == (JobState.COMPLETED, {"sum": 3}, 1)
    assert record.finished_at is not None
    assert record.lease_expires_at is None
    assert claim_ids(driver) == []


def test_job_ack_many_answers_only_landed_ids(driver):
    good = [_running(driver) for _ in range(2)]
    stale = _running(driver)
    missing = uuid.uuid4()
    items = [
        AckItem(job_id=good[0].id, claim_token=good[0].claim_token, result_json="1"),
        AckItem(job_id=stale.id, claim_token=uuid.uuid4(), result_json="2"),
        AckItem(job_id=missing, claim_token=uuid.uuid4(), result_json="3"),
        AckItem(job_id=good[1].id, claim_token=good[1].claim_token, result_json="4"),
    ]
    assert driver.job_ack_many(items=items) == {good[0].id, good[1].id}
    assert [get(driver, job.id).result for job in good] == [1, 4]
    assert state_of(driver, stale.id) == JobState.RUNNING
    assert driver.job_get(job_id=missing) is None


def test_job_ack_many_empty_batch_lands_nothing(driver):
    assert driver.job_ack_many(items=[]) == set()


def test_job_ack_many_second_ack_does_not_land(driver, store):
    job = _running(driver)
    assert ack(driver, job.id, job.claim_token, '"first"')
    assert not ack(driver, job.id, job.claim_token, '"second"')
    assert get(driver, job.id).result == "first"
    assert store.counters("tests.echo") == counters(completed=1)


def test_job_ack_many_counts_per_name(driver, store):
    jobs = [_running(driver, name=name) for name in ("tests.echo", "tests.noop", "tests.echo")]
    items = [AckItem(job_id=job.id, claim_token=job.claim_token) for job in jobs]
    assert driver.job_ack_many(items=items) == {job.id for job in jobs}
    assert store.counters("tests.echo") == counters(completed=2)
    assert store.counters("tests.noop") == counters(completed=1)
    assert store.counters("tests.add") == counters()


def test_job_nack_retry_with_delay_is_not_due_until_then(driver, store):
    job = _running(driver)
    leased = get(driver, job.id).lease_expires_at
    assert nack("retry", delay=600)(driver, job.id, job.claim_token)
    record = get(driver, job.id)
    assert (record.state, record.attempt, record.lease_expires_at) == (JobState.QUEUED, 1, None)
    assert about(600 - LEASE, seconds_between(record.run_at, leased))
    assert claim_ids(driver) == []
    assert driver.queue_demand(queues=["default"]) == {"default": 0}
    store.make_due(job.id)
    again = claim_one(driver)
    assert (again.id, again.attempt) == (job.id, 2)


def test_job_nack_retry_without_delay_is_claimable_at_once(driver):
    job = _running(driver)
    assert nack("retry")(driver, job.id, job.claim_token)
    assert claim_ids(driver) == [job.id]


@pytest.mark.parametrize(
    ("action", "state"), [("retry", JobState.QUEUED), ("fail", JobState.FAILED)]
)
def test_job_nack_not_counted_gives_attempt_back(driver, action, state):
    job_id = enqueue(driver)
    for _ in range(2):
        job = claim_one(driver)
        assert nack("retry")(driver, job.id, job.claim_token)
    job = claim_one(driver)
    assert job.attempt == 3
    assert nack(action, counts=False)(driver, job.id, job.claim_token)
    record = get(driver, job_id)
    assert (record.state, record.attempt) == (state, 2)
    assert len(record.errors) == 3


def test_job_nack_not_counted_retry_then_claims_same_attempt(driver):
    job = _running(driver)
    assert nack("retry", counts=False)(driver, job.id, job.claim_token)
    assert get(driver, job.id).attempt == 0
    assert claim_one(driver).attempt == 1


def test_job_nack_fail_keeps_dead_letter_with_error_entry(driver):
    job = _running(driver)
    error = attempt_error(1, worker_id="w-dead", message="it broke: ü")
    landed = driver.job_nack(job_id=job.id, claim_token=job.claim_token, action="fail", error=error)
    assert landed is True
    record = get(driver, job.id)
    assert (record.state, record.attempt, record.lease_expires_at) == (JobState.FAILED, 1, None)
    assert record.finished_at is not None
    [entry] = record.errors
    assert set(entry) == ERROR_KEYS
    assert {key: entry[key] for key in ERROR_KEYS - {"at"}} == error.as_json()
    assert about(0, seconds_between(_stamp(entry), record.finished_at))
    assert claim_ids(driver) == []


def test_job_nack_errors_append_in_order(driver):
    job_id = enqueue(driver)
    for attempt, action in ((1, "retry"), (2, "retry"), (3, "fail")):
        job = claim_one(driver)
        error = attempt_error(job.attempt, error_class=f"app.E{attempt}")
        assert driver.job_nack(
            job_id=job.id, claim_token=job.claim_token, action=action, error=error
        )
    errors = get(driver, job_id).errors
    assert [(e["attempt"], e["error_class"], e["message"]) for e in errors] == [
        (1, "app.E1", "boom 1"),
        (2, "app.E2", "boom 2"),
        (3, "app.E3", "boom 3"),
    ]
    assert all(set(entry) == ERROR_KEYS for entry in errors)


@pytest.mark.parametrize("action", ["retry", "fail"])
def test_job_nack_without_error_appends_nothing(driver, action):
    job = _running(driver)
    assert driver.job_nack(job_id=job.id, claim_token=job.claim_token, action=action)
    assert get(driver, job.id).errors == []


def test_job_nack_drop_deletes_row(driver, store):
    keep = enqueue(driver, queue="other")
    job = _running(driver)
    assert nack("drop")(driver, job.id, job.claim_token)
    assert driver.job_get(job_id=job.id) is None
    assert store.row_count() == 1
    assert state_of(driver, keep) == JobState.QUEUED


SETTLES = {
    "ack": (ack, counters(completed=1)),
    "retry": (nack("retry"), counters(retried=1)),
    "retry_not_counted": (nack("retry", counts=False), counters()),
    "fail": (nack("fail"), counters(dead=1)),
    "fail_not_counted": (nack("fail", counts=False), counters(refused=1)),
    "drop": (nack("drop"), counters(dropped=1)),
}


@pytest.mark.parametrize("outcome", list(SETTLES))
def test_job_settle_moves_counters_exactly(driver, store, outcome):
    write, expected = SETTLES[outcome]
    job = _running(driver, name="tests.add")
    assert not write(driver, job.id, uuid.uuid4())
    assert store.counters("tests.add") == counters()
    assert write(driver, job.id, job.claim_token)
    assert store.counters("tests.add") == expected
    assert not write(driver, job.id, job.claim_token)
    assert store.counters("tests.add") == expected
    assert store.counters("tests.echo") == counters()


def test_job_ack_many_stores_the_last_progress_given(driver):
    given, kept = _running(driver), _running(driver)
    assert driver.job_progress(
        job_id=kept.id, claim_token=kept.claim_token, progress_json='{"current":1}'
    )
    items = [
        AckItem(job_id=given.id, claim_token=given.claim_token, progress_json='{"current":9}'),
        AckItem(job_id=kept.id, claim_token=kept.claim_token),
    ]
    assert driver.job_ack_many(items=items) == {given.id, kept.id}
    assert get(driver, given.id).progress == {"current": 9}
    assert get(driver, kept.id).progress == {"current": 1}


@pytest.mark.parametrize("action", ["retry", "fail"])
def test_job_nack_stores_the_last_progress_given(driver, action):
    job = _running(driver)
    assert driver.job_nack(
        job_id=job.id, claim_token=job.claim_token, action=action, progress_json='{"at":"step 2"}'
    )
    assert get(driver, job.id).progress == {"at": "step 2"}


def test_job_settle_progress_is_fenced(driver):
    job = _running(driver)
    stale = uuid.uuid4()
    item = AckItem(job_id=job.id, claim_token=stale, progress_json='"stale"')
    assert driver.job_ack_many(items=[item]) == set()
    assert not driver.job_nack(
        job_id=job.id, claim_token=stale, action="fail", progress_json='"stale"'
    )
    assert get(driver, job.id).progress is None


def _refusal(driver):
    """A write the store refuses raises the seam's ``StoreRefused`` on every driver, never a
    database error; on PostgreSQL it runs in a savepoint, so the test's own transaction stays
    usable."""
    savepoint = transaction.atomic() if driver.name == "postgres" else contextlib.nullcontext()
    return pytest.raises(StoreRefused), savepoint


def _told_without_the_row(caught, text):
    refused = caught.value
    assert refused.code == "X_STORE_REFUSED"
    assert not isinstance(refused, DatabaseError)
    assert refused.reason and text not in str(refused), "a refusal quotes the row it refused"


@pytest.mark.parametrize("text", ["nul \x00 inside", "lone \ud800 surrogate"])
def test_job_nack_refuses_an_error_entry_jsonb_cannot_hold(driver, text):
    """What jsonb refuses is refused by every driver, and nothing is written: the settler
    then isolates the refused attempt instead of retrying it."""
    job = _running(driver)
    before = get(driver, job.id)
    error = attempt_error(1, error_class=f"app.{text}")
    raises, savepoint = _refusal(driver)
    with raises as caught, savepoint:
        driver.job_nack(job_id=job.id, claim_token=job.claim_token, action="fail", error=error)
    assert caught.value.code == "X_STORE_REFUSED"
    assert get(driver, job.id) == before


@pytest.mark.parametrize("result", ['{"kept out": NaN}', '{"kept out": 1'])
def test_job_ack_many_refuses_a_result_jsonb_cannot_hold(driver, result):
    """A result the store cannot hold refuses the whole batch with ``StoreRefused``, nothing
    written, and the refusal does not quote the row: the settler then splits the batch."""
    job, other = _running(driver), _running(driver)
    before = [get(driver, job.id), get(driver, other.id)]
    items = [
        AckItem(job_id=other.id, claim_token=other.claim_token, result_json="1"),
        AckItem(job_id=job.id, claim_token=job.claim_token, result_json=result),
    ]
    raises, savepoint = _refusal(driver)
    with raises as caught, savepoint:
        driver.job_ack_many(items=items)
    _told_without_the_row(caught, "kept out")
    assert [get(driver, job.id), get(driver, other.id)] == before
