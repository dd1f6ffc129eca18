"""The operator verbs, on both drivers: what they do, what they refuse and with which code; and,
on PostgreSQL with a real in-process worker, a cancel that reaches a running attempt."""

from __future__ import annotations

import threading
import uuid
from typing import Any, NoReturn

import pytest

from tests.drivers.support import (
    claim_ids,
    claim_one,
    enqueue,
    get,
    put_in_state,
    state_of,
)
from tests.testapp import jobs
from tests.testapp.models import Effect
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.errors import (
    CancelReasonInvalid,
    DriverUnavailable,
    JobDuplicate,
    JobNotCancellable,
    JobNotFound,
    JobNotPromotable,
    JobNotRemovable,
    JobNotRequeueable,
    PauseInvalid,
    StoreRefused,
)
from ultimat3_jobs.operator import verbs
from ultimat3_jobs.types import BulkResult, JobRecord, JobState


def in_state(driver, state: str, **overrides) -> uuid.UUID:
    job_id = enqueue(driver, **overrides)
    put_in_state(driver, job_id, state)
    return job_id


def refused(error_class, code: str, call, *args):
    with pytest.raises(error_class) as caught:
        call(*args)
    assert caught.value.code == code
    assert str(caught.value).startswith(f"{code}: ")
    return caught.value


# -- cancel -----------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["queued", "running"])
def test_cancel_live_job(driver, state):
    job_id = in_state(driver, state)
    verbs.cancel(driver, job_id)
    assert state_of(driver, job_id) is JobState.CANCELLED


def test_cancel_takes_the_id_as_text(driver):
    job_id = enqueue(driver)
    verbs.cancel(driver, f" {job_id} ")
    assert state_of(driver, job_id) is JobState.CANCELLED


@pytest.mark.parametrize("state", ["completed", "failed", "cancelled"])
def test_cancel_finished_job_is_refused(driver, state):
    job_id = in_state(driver, state)
    before = get(driver, job_id)
    error = refused(JobNotCancellable, "X_JOB_NOT_CANCELLABLE", verbs.cancel, driver, job_id)
    assert state in error.message
    assert get(driver, job_id) == before


@pytest.mark.parametrize("job_id", [uuid.uuid4(), "not-a-uuid", ""])
def test_cancel_unknown_job_is_refused(driver, job_id):
    refused(JobNotFound, "X_JOB_NOT_FOUND", verbs.cancel, driver, job_id)


def test_cancel_keeps_its_reason_and_author_in_the_errors(driver):
    job_id = in_state(driver, "running")
    verbs.cancel(driver, job_id, reason="  duplicate order  ", cancelled_by="cli:ops")
    [entry] = get(driver, job_id).errors
    assert (entry["error_class"], entry["message"], entry["cancelled_by"]) == (
        "ultimat3_jobs.Cancelled",
        "duplicate order",
        "cli:ops",
    )


def test_cancel_many_keeps_the_reason_on_each_job_it_moved(driver):
    done = in_state(driver, "completed")
    moved = [enqueue(driver) for _ in range(2)]
    result = verbs.cancel_many(driver, [*moved, done], reason="bad batch")
    assert result == BulkResult(moved=2, remaining=1)
    assert [get(driver, job_id).errors[-1]["message"] for job_id in moved] == ["bad batch"] * 2
    assert get(driver, done).errors == []


@pytest.mark.parametrize("reason", ["x" * 1001, "nul\x00inside", 42])
def test_an_invalid_cancel_reason_is_refused_and_nothing_moves(driver, reason):
    job_id = enqueue(driver)
    refused(
        CancelReasonInvalid,
        "X_CANCEL_REASON_INVALID",
        lambda: verbs.cancel(driver, job_id, reason=reason),
    )
    with pytest.raises(CancelReasonInvalid):
        verbs.cancel_many(driver, [job_id], reason=reason)
    assert state_of(driver, job_id) is JobState.QUEUED


# -- requeue ----------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["completed", "failed", "cancelled"])
def test_requeue_finished_job(driver, state):
    job_id = in_state(driver, state)
    verbs.requeue(driver, str(job_id))
    record = get(driver, job_id)
    assert (record.state, record.attempt) == (JobState.QUEUED, 0)


@pytest.mark.parametrize("state", ["queued", "running"])
def test_requeue_live_job_is_refused(driver, state):
    job_id = in_state(driver, state)
    refused(JobNotRequeueable, "X_JOB_NOT_REQUEUEABLE", verbs.requeue, driver, job_id)
    assert state_of(driver, job_id) == state


def test_requeue_refusals_for_a_missing_job_and_a_held_key(driver):
    refused(JobNotFound, "X_JOB_NOT_FOUND", verbs.requeue, driver, uuid.uuid4())
    old = in_state(driver, "failed", idempotency_key="k")
    enqueue(driver, idempotency_key="k")
    refused(JobDuplicate, "X_JOB_DUPLICATE", verbs.requeue, driver, old)


# -- promote ----------------------------------------------------------------------------------


def test_promote_future_job(driver, store):
    job_id = enqueue(driver)
    store.make_future(job_id, 3600)
    assert verbs.promote(driver, job_id) is True
    assert claim_ids(driver) == [job_id]


def test_promote_due_job_answers_false(driver):
    job_id = enqueue(driver)
    assert verbs.promote(driver, job_id) is False


@pytest.mark.parametrize("state", ["running", "completed", "failed", "cancelled"])
def test_promote_job_that_is_not_queued_is_refused(driver, state):
    job_id = in_state(driver, state)
    error = refused(JobNotPromotable, "X_JOB_NOT_PROMOTABLE", verbs.promote, driver, job_id)
    assert state in error.message


def test_promote_missing_job_is_refused(driver):
    refused(JobNotFound, "X_JOB_NOT_FOUND", verbs.promote, driver, uuid.uuid4())


# -- remove -----------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["queued", "completed", "failed", "cancelled"])
def test_remove_job_that_is_not_running(driver, state):
    job_id = in_state(driver, state)
    verbs.remove(driver, job_id)
    assert driver.job_get(job_id=job_id) is None


def test_remove_running_job_is_refused_until_cancelled(driver):
    job_id = enqueue(driver)
    job = claim_one(driver)
    refused(JobNotRemovable, "X_JOB_NOT_REMOVABLE", verbs.remove, driver, job_id)
    assert state_of(driver, job_id) is JobState.RUNNING
    verbs.cancel(driver, job_id)
    verbs.remove(driver, job_id)
    assert driver.job_get(job_id=job.id) is None


def test_remove_missing_job_is_refused(driver):
    refused(JobNotFound, "X_JOB_NOT_FOUND", verbs.remove, driver, uuid.uuid4())


# -- bulk -------------------------------------------------------------------------------------


def test_cancel_many_counts_instead_of_refusing(driver):
    running = in_state(driver, "running")
    completed = in_state(driver, "completed")
    queued = enqueue(driver)
    result = verbs.cancel_many(
        driver, [queued, str(running), completed, uuid.uuid4(), "junk", queued]
    )
    assert result == BulkResult(moved=2, remaining=3)
    assert {state_of(driver, queued), state_of(driver, running)} == {JobState.CANCELLED}
    assert state_of(driver, completed) is JobState.COMPLETED


def test_requeue_many(driver):
    failed = [in_state(driver, "failed") for _ in range(2)]
    running = in_state(driver, "running")
    assert verbs.requeue_many(driver, [*failed, running]) == BulkResult(2, 1)
    assert [state_of(driver, job_id) for job_id in failed] == [JobState.QUEUED] * 2


def test_promote_many_counts_a_due_job_as_remaining(driver, store):
    later = [enqueue(driver) for _ in range(2)]
    for job_id in later:
        store.make_future(job_id, 600)
    due = enqueue(driver)
    assert verbs.promote_many(driver, [*later, due]) == BulkResult(2, 1)


def test_remove_many(driver):
    running = in_state(driver, "running")
    removable = [in_state(driver, "completed"), enqueue(driver)]
    assert verbs.remove_many(driver, [*removable, running]) == BulkResult(2, 1)
    assert verbs.remove_many(driver, []) == BulkResult(0, 0)


# -- retry_failed -----------------------------------------------------------------------------


def test_retry_failed_moves_every_failed_job_in_chunks(driver, monkeypatch):
    monkeypatch.setattr(verbs, "RETRY_FAILED_CHUNK", 2)
    failed = [in_state(driver, "failed") for _ in range(5)]
    in_state(driver, "failed", name="tests.add", queue="math")
    assert verbs.retry_failed(driver, "tests.echo") == BulkResult(5, 0)
    assert {state_of(driver, job_id) for job_id in failed} == {JobState.QUEUED}


def test_retry_failed_stops_at_the_limit(driver, monkeypatch):
    monkeypatch.setattr(verbs, "RETRY_FAILED_CHUNK", 2)
    for _ in range(5):
        in_state(driver, "failed")
    assert verbs.retry_failed(driver, "tests.echo", 3) == BulkResult(3, 2)
    assert verbs.retry_failed(driver, "tests.echo", 0) == BulkResult(0, 2)
    with pytest.raises(ValueError):
        verbs.retry_failed(driver, "tests.echo", -1)


def test_retry_failed_leaves_held_keys_and_stops(driver, monkeypatch):
    monkeypatch.setattr(verbs, "RETRY_FAILED_CHUNK", 1)
    held = in_state(driver, "failed", idempotency_key="k1")
    in_state(driver, "failed")
    enqueue(driver, idempotency_key="k1")
    assert verbs.retry_failed(driver, "tests.echo") == BulkResult(1, 1)
    assert state_of(driver, held) is JobState.FAILED


# -- pauses -----------------------------------------------------------------------------------


def test_pause_and_resume_a_queue(driver):
    job_id = enqueue(driver)
    assert verbs.pause_queue(driver, "default", paused_by="ops", reason="migration") is True
    assert verbs.pause_queue(driver, "default", paused_by="other") is False
    assert claim_ids(driver) == []
    (pause,) = driver.pause_list()
    assert (pause.scope, pause.target, pause.paused_by, pause.reason) == (
        "queue",
        "default",
        "ops",
        "migration",
    )
    assert verbs.resume_queue(driver, "default") is True
    assert verbs.resume_queue(driver, "default") is False
    assert claim_ids(driver) == [job_id]


def test_pause_and_resume_a_job_name(driver):
    paused = enqueue(driver, name="tests.add")
    free = enqueue(driver)
    assert verbs.pause_job(driver, "tests.add") is True
    assert claim_ids(driver) == [free]
    assert verbs.resume_job(driver, "tests.add") is True
    assert claim_ids(driver) == [paused]


def test_pause_and_resume_a_cron(driver):
    """A cron's pause keeps its stored scope, ``task``."""
    assert verbs.pause_cron(driver, "tests.every_second", reason="noisy") is True
    assert [(p.scope, p.target) for p in driver.pause_list()] == [("task", "tests.every_second")]
    assert verbs.resume_cron(driver, "tests.every_second") is True
    assert driver.pause_list() == []


def test_the_task_names_of_the_cron_verbs_still_work_and_warn(driver):
    with pytest.warns(DeprecationWarning, match="use pause_cron"):
        assert verbs.pause_task(driver, "tests.every_second") is True
    assert [(p.scope, p.target) for p in driver.pause_list()] == [("task", "tests.every_second")]
    with pytest.warns(DeprecationWarning, match="use resume_cron"):
        assert verbs.resume_task(driver, "tests.every_second") is True
    assert driver.pause_list() == []


def test_pause_without_target_is_refused(driver):
    with pytest.raises(PauseInvalid) as caught:
        verbs.pause_queue(driver, "")
    assert caught.value.code == "X_PAUSE_INVALID"


# -- with a real worker (PostgreSQL, committed transactions) ----------------------------------


def test_cancelling_a_running_job_through_the_verb_ends_it_cancelled(make_worker):
    result = jobs.waits_for_cancel.enqueue(seconds=20)
    running = make_worker()
    wait_for(lambda: Effect.objects.filter(job_id=result.id).exists(), what="the body started")
    driver = PostgresDriver()
    refused(JobNotRequeueable, "X_JOB_NOT_REQUEUEABLE", verbs.requeue, driver, result.id)
    refused(JobNotRemovable, "X_JOB_NOT_REMOVABLE", verbs.remove, driver, result.id)
    verbs.cancel(driver, result.id)
    wait_for(lambda: not running.worker.running_attempts(), what="the attempt stopped")
    record = driver.job_get(job_id=result.id)
    assert record is not None
    assert (record.state, record.result) == (JobState.CANCELLED, None)
    # The body saw its cancel and returned "cancelled", but nothing it answered was written.
    assert Effect.objects.filter(job_id=result.id).count() == 1
    refused(JobNotCancellable, "X_JOB_NOT_CANCELLABLE", verbs.cancel, driver, result.id)
    verbs.remove(driver, result.id)
    assert driver.job_get(job_id=result.id) is None


@pytest.mark.django_db(transaction=True)
def test_promote_and_retry_failed_wake_listening_workers():
    driver = PostgresDriver()
    woken: list[str] = []
    arrived = threading.Event()

    def on_wake(queue: str) -> None:
        woken.append(queue)
        arrived.set()

    subscription = driver.wake_subscribe(on_wake=on_wake)
    assert subscription is not None
    try:
        wait_for(subscription.is_live, timeout=10, what="the listener is live")
        later = jobs.echo.using(delay=3600, queue="emails").enqueue()
        failed = in_state(driver, "failed", queue="reports")
        arrived.clear()
        woken.clear()
        assert verbs.promote(driver, later.id) is True
        assert arrived.wait(5), "no wake after the promote"
        wait_for(lambda: "emails" in woken)
        arrived.clear()
        assert verbs.retry_failed(driver, "tests.echo") == BulkResult(1, 0)
        wait_for(lambda: "reports" in woken, what="a wake after retry_failed")
        assert state_of(driver, failed) is JobState.QUEUED
    finally:
        subscription.close()


class FailingStore(MemoryDriver):
    """A store whose every per-job operator write or read fails with ``error``."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error
        self.calls = 0

    def _fail(self) -> NoReturn:
        self.calls += 1
        raise self.error

    def job_cancel(self, **_: Any) -> bool:
        self._fail()

    def job_get(self, **_: Any) -> JobRecord | None:
        self._fail()

    def job_requeue(self, **_: Any) -> None:
        self._fail()

    def job_promote(self, **_: Any) -> bool:
        self._fail()

    def job_remove(self, **_: Any) -> bool:
        self._fail()


@pytest.mark.parametrize("bulk", ["cancel_many", "requeue_many", "promote_many", "remove_many"])
@pytest.mark.parametrize(
    "error",
    [DriverUnavailable("lost"), StoreRefused(reason="DataError: refused")],
    ids=["unavailable", "refused"],
)
def test_a_bulk_verb_raises_a_store_error_instead_of_counting_every_job(bulk, error):
    """A store error is not one job's state: the bulk verb stops and raises it, where a
    refusal of one job (``JobNotCancellable``, ...) counts that job as remaining."""
    store = FailingStore(error)
    with pytest.raises(type(error)):
        getattr(verbs, bulk)(store, [uuid.uuid4() for _ in range(3)])
    assert store.calls == 1
