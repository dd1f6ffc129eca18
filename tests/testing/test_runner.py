"""run_enqueued: due jobs run inline through the worker's execute and settle path."""

from __future__ import annotations

import pytest

from tests.testapp.models import Effect
from tests.testing import jobs
from tests.testing.conftest import calls
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.testing import enqueued_jobs, run_enqueued, travel
from ultimat3_jobs.types import JobState


def state(driver: JobDriver, job_id: object) -> JobState | None:
    record = driver.job_get(job_id=job_id)  # type: ignore[arg-type]
    return None if record is None else record.state


def test_runs_the_due_jobs_and_answers_a_summary(driver: JobDriver) -> None:
    first = jobs.greet.enqueue(who="ada", org="acme")
    second = jobs.other.enqueue(n=2)

    summary = run_enqueued()

    assert set(summary.completed) == {first.id, second.id}
    assert (summary.retried, summary.failed, summary.dropped) == ((), (), ())
    assert summary.attempts == 2 and not summary.errors
    record = driver.job_get(job_id=first.id)
    assert record is not None and record.state is JobState.COMPLETED
    assert record.result == "hello ada"
    assert record.progress == {"current": 1, "total": 1}
    # The body ran with its job's tenant installed, as in a worker.
    assert calls("testing.greet") == [{"who": "ada", "tenant": "acme"}]
    assert str(summary) == "2 attempt(s): 2 completed, 0 retried, 0 failed, 0 dropped"


def test_runs_in_claim_order(driver: JobDriver) -> None:
    jobs.other.enqueue(n=1)
    jobs.other.using(priority=10).enqueue(n=2)
    jobs.other.enqueue(n=3)

    run_enqueued()

    assert calls("testing.other") == [2, 1, 3]


def test_runs_only_the_queue_asked_for(driver: JobDriver) -> None:
    greeting = jobs.greet.enqueue(who="ada")
    default = jobs.other.enqueue(n=1)

    summary = run_enqueued("greetings")

    assert summary.completed == (greeting.id,)
    assert state(driver, default.id) is JobState.QUEUED


def test_a_job_due_later_is_left_until_travel(driver: JobDriver) -> None:
    later = jobs.other.using(delay=3600).enqueue(n=1)

    assert run_enqueued().attempts == 0
    assert state(driver, later.id) is JobState.QUEUED
    travel(3600)
    assert run_enqueued().completed == (later.id,)


def test_a_retry_with_no_backoff_runs_again_in_the_same_call(driver: JobDriver) -> None:
    queued = jobs.fails_then_works.enqueue()

    summary = run_enqueued()

    assert summary.retried == (queued.id,) and summary.completed == (queued.id,)
    assert summary.errors[queued.id].message == "attempt 1 fails on purpose"
    assert calls("testing.fails_then_works") == [1, 2]


def test_a_retry_with_backoff_waits_for_travel_then_is_dead_lettered(
    driver: JobDriver,
) -> None:
    queued = jobs.fails_slowly.enqueue()

    first = run_enqueued()
    assert first.retried == (queued.id,) and first.completed == ()
    assert "retried" in str(first) and "attempt 1 fails on purpose" in str(first)
    assert [job.id for job in enqueued_jobs(jobs.fails_slowly)] == [queued.id]
    assert run_enqueued().attempts == 0  # its backoff (600 s) is not over

    assert travel(600) == [queued.id]
    second = run_enqueued()
    assert second.failed == (queued.id,)
    record = driver.job_get(job_id=queued.id)
    assert record is not None and record.state is JobState.FAILED
    assert [error["message"] for error in record.errors] == [
        "attempt 1 fails on purpose",
        "attempt 2 fails on purpose",
    ]


def test_terminal_and_dropped_endings(driver: JobDriver) -> None:
    terminal = jobs.terminal.enqueue()
    dropped = jobs.dropped.enqueue()

    summary = run_enqueued()

    assert summary.failed == (terminal.id,)
    assert calls("testing.terminal") == [1]  # Terminal is not retried
    assert summary.dropped == (dropped.id,)
    assert state(driver, dropped.id) is None
    assert summary.errors[terminal.id].error_class == "ultimat3_jobs.errors.Terminal"


def test_jobs_enqueued_by_a_body_run_too(driver: JobDriver) -> None:
    jobs.chain.enqueue(then=7)

    summary = run_enqueued()

    assert summary.attempts == 2
    assert calls("testing.other") == [7]


def test_a_job_that_enqueues_itself_forever_is_refused(driver: JobDriver) -> None:
    jobs.forever.enqueue()

    with pytest.raises(AssertionError, match=r"ran 5 attempts and jobs are still due"):
        run_enqueued(limit=5)


def test_on_settled_runs_once_the_settle_landed(driver: JobDriver) -> None:
    jobs.hooked.enqueue()
    run_enqueued()
    assert jobs.SETTLED == [("testing.hooked", "completed")]


def test_async_bodies_run(driver: JobDriver) -> None:
    queued = jobs.async_job.enqueue(value=21)

    assert run_enqueued().completed == (queued.id,)
    record = driver.job_get(job_id=queued.id)
    assert record is not None and record.result == 42


def test_a_paused_queue_is_not_run(driver: JobDriver) -> None:
    queued = jobs.greet.enqueue(who="ada")
    driver.queue_pause(queue="greetings")

    assert run_enqueued().attempts == 0
    assert state(driver, queued.id) is JobState.QUEUED
    driver.queue_resume(queue="greetings")
    assert run_enqueued().completed == (queued.id,)


@pytest.mark.django_db
def test_a_body_sees_the_tests_rows_and_a_failed_one_leaves_none() -> None:
    """On PostgreSQL the body runs on the test's connection, inside its transaction."""
    Effect.objects.create(job_id="00000000-0000-0000-0000-000000000001", attempt=0, worker_pid=0)
    kept = jobs.writes.enqueue(label="kept")
    failed = jobs.writes.enqueue(label="rolled back", fail=True)

    summary = run_enqueued()

    assert summary.completed == (kept.id,) and summary.failed == (failed.id,)
    assert sorted(Effect.objects.values_list("label", flat=True)) == ["", "kept"]
