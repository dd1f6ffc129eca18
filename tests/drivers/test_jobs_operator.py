"""job_cancel, job_requeue, job_get and job_progress: what an operator or a reader sees."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.drivers.support import (
    ack,
    attempt_error,
    claim_ids,
    claim_one,
    counters,
    enqueue,
    get,
    put_in_state,
    request,
    state_of,
)
from ultimat3_jobs.errors import JobDuplicate, JobNotFound, JobNotRequeueable
from ultimat3_jobs.serialization import encode_json
from ultimat3_jobs.types import JobState

FINISHED = ["completed", "failed", "cancelled"]


def _nack_with_attempt(driver, job, action):
    error = attempt_error(job.attempt)
    assert driver.job_nack(job_id=job.id, claim_token=job.claim_token, action=action, error=error)


def _failed_after_retries(driver, **overrides):
    job_id = enqueue(driver, **overrides)
    for action in ("retry", "retry", "fail"):
        _nack_with_attempt(driver, claim_one(driver), action)
    record = get(driver, job_id)
    assert (record.state, record.attempt, len(record.errors)) == (JobState.FAILED, 3, 3)
    return record


def test_job_cancel_queued_job(driver, store):
    job_id = enqueue(driver)
    assert driver.job_cancel(job_id=job_id) is True
    record = get(driver, job_id)
    assert (record.state, record.attempt) == (JobState.CANCELLED, 0)
    assert record.finished_at is not None
    assert claim_ids(driver) == []
    assert store.counters("tests.echo") == counters(cancelled=1)


def test_job_cancel_running_job_refuses_later_ack(driver, store):
    job_id = enqueue(driver)
    job = claim_one(driver)
    assert driver.job_cancel(job_id=job_id) is True
    assert not ack(driver, job.id, job.claim_token, '"too late"')
    record = get(driver, job_id)
    assert (record.state, record.result, record.lease_expires_at) == (
        JobState.CANCELLED,
        None,
        None,
    )
    assert store.counters("tests.echo") == counters(cancelled=1)


@pytest.mark.parametrize("state", FINISHED)
def test_job_cancel_finished_job_answers_false(driver, store, state):
    job_id = enqueue(driver)
    put_in_state(driver, job_id, state)
    before, moved = get(driver, job_id), store.counters("tests.echo")
    assert driver.job_cancel(job_id=job_id) is False
    assert get(driver, job_id) == before
    assert store.counters("tests.echo") == moved


def test_job_cancel_missing_job_answers_false(driver, store):
    assert driver.job_cancel(job_id=uuid.uuid4()) is False
    assert store.row_count() == 0


@pytest.mark.parametrize("state", FINISHED)
def test_job_requeue_finished_job_is_queued_and_due(driver, store, state):
    job_id = enqueue(driver)
    put_in_state(driver, job_id, state)
    store.make_future(job_id, 3600)
    before = get(driver, job_id)
    assert driver.job_requeue(job_id=job_id) is None
    record = get(driver, job_id)
    assert (record.state, record.attempt, record.errors) == (JobState.QUEUED, 0, before.errors)
    job = claim_one(driver)
    assert (job.id, job.attempt) == (job_id, 1)


def test_job_requeue_failed_resets_attempts_and_keeps_errors(driver):
    before = _failed_after_retries(driver, max_attempts=3)
    driver.job_requeue(job_id=before.id)
    record = get(driver, before.id)
    assert (record.state, record.attempt, record.max_attempts) == (JobState.QUEUED, 0, 3)
    assert record.errors == before.errors
    _nack_with_attempt(driver, claim_one(driver), "fail")
    assert [entry["attempt"] for entry in get(driver, before.id).errors] == [1, 2, 3, 1]


@pytest.mark.parametrize("state", ["queued", "running"])
def test_job_requeue_live_job_is_refused(driver, state):
    job_id = enqueue(driver)
    put_in_state(driver, job_id, state)
    before = get(driver, job_id)
    with pytest.raises(JobNotRequeueable) as caught:
        driver.job_requeue(job_id=job_id)
    assert caught.value.code == "X_JOB_NOT_REQUEUEABLE"
    assert get(driver, job_id) == before


def test_job_requeue_missing_job_is_refused(driver):
    with pytest.raises(JobNotFound) as caught:
        driver.job_requeue(job_id=uuid.uuid4())
    assert caught.value.code == "X_JOB_NOT_FOUND"


def test_job_requeue_refused_while_live_job_holds_key(driver):
    old = _failed_after_retries(driver, idempotency_key="invoice-7")
    holder = enqueue(driver, idempotency_key="invoice-7")
    with pytest.raises(JobDuplicate) as caught:
        driver.job_requeue(job_id=old.id)
    assert (caught.value.code, caught.value.existing_id) == ("X_JOB_DUPLICATE", holder)
    assert get(driver, old.id) == old


def test_job_requeue_allowed_once_key_holder_finishes(driver):
    old = _failed_after_retries(driver, idempotency_key="invoice-8")
    holder = enqueue(driver, idempotency_key="invoice-8")
    put_in_state(driver, holder, "completed")
    driver.job_requeue(job_id=old.id)
    assert state_of(driver, old.id) == JobState.QUEUED
    again = driver.job_enqueue(request=request(idempotency_key="invoice-8"))
    assert (again.id, again.status) == (old.id, "deduped")


def test_job_get_missing_job_is_none(driver):
    enqueue(driver)
    assert driver.job_get(job_id=uuid.uuid4()) is None


def test_job_progress_is_read_back_and_overwritten(driver):
    job_id = enqueue(driver)
    job = claim_one(driver)
    assert get(driver, job_id).progress is None
    assert driver.job_progress(job_id=job_id, claim_token=job.claim_token, progress_json='{"p":1}')
    assert get(driver, job_id).progress == {"p": 1}
    assert driver.job_progress(
        job_id=job_id, claim_token=job.claim_token, progress_json='{"p":2,"of":[3]}'
    )
    assert get(driver, job_id).progress == {"p": 2, "of": [3]}


PAYLOADS = {
    "nested": {"a": {"b": [1, {"c": [True, False, None]}]}, "deep": [[[["x"]]]]},
    "unicode": {"greeting": "Grüße, 世界 🌍", "escapes": '"\\/\n\t\u2028', "ключ": "значение"},
    "floats": {"pi": 3.141592653589793, "tiny": 1.5e-07, "neg": -0.5, "sum": 0.1 + 0.2, "one": 1.0},
    "ints": {"max": 2**63 - 1, "min": -(2**63), "zero": 0, "past_double": 2**53 + 1},
    "empty": {"obj": {}, "arr": [], "str": "", "nested": [{}, []]},
    "top_level_list": [1, "two", 3.5, None, {"k": []}],
    "float_exponent": {"huge": 1e300, "e16": 1e16, "small": 5e-324},
}


def _typed(value):
    """The value with each scalar's type beside it, so 1 and 1.0 and True differ."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def _store_json(driver, field, text):
    if field == "input":
        return enqueue(driver, input_json=text)
    job_id = enqueue(driver)
    job = claim_one(driver)
    if field == "result":
        assert ack(driver, job_id, job.claim_token, text)
    else:
        assert driver.job_progress(job_id=job_id, claim_token=job.claim_token, progress_json=text)
    return job_id


@pytest.mark.parametrize("payload", list(PAYLOADS))
@pytest.mark.parametrize("field", ["input", "result", "progress"])
def test_job_get_json_round_trip(driver, field, payload):
    value = PAYLOADS[payload]
    # Callers hand drivers the JSON text encode_json makes (it writes large floats so that
    # jsonb keeps them floats).
    text = encode_json(value, max_depth=32, max_bytes=1 << 20)
    job_id = _store_json(driver, field, text)
    read = getattr(get(driver, job_id), field)
    assert _typed(read) == _typed(value)


@pytest.mark.parametrize("value", [0, -12, "text", None, True, 2.5])
def test_job_get_scalar_result_round_trip(driver, value):
    job_id = _store_json(driver, "result", json.dumps(value))
    assert _typed(get(driver, job_id).result) == _typed(value)
