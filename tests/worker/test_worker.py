"""The worker end to end on PostgreSQL: it runs, retries, fails, times out, cancels, settles
once, and gives back what it still runs when it stops."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import pytest

from tests.testapp import jobs
from tests.testapp.models import Effect
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.models import Job, JobCounter, JobWorker
from ultimat3_jobs.types import EnqueueRequest, new_job_id


def state(job_id: uuid.UUID) -> str | None:
    return Job.objects.filter(id=job_id).values_list("state", flat=True).first()


def finished(*ids: uuid.UUID) -> bool:
    return not Job.objects.filter(id__in=ids, state__in=["queued", "running"]).exists()


def test_runs_jobs_and_stores_their_results(make_worker) -> None:
    results = jobs.record.enqueue_many([{"n": n} for n in range(40)])
    extra = jobs.add.enqueue(a=2, b=3, org="acme")
    running = make_worker()
    ids = [r.id for r in results] + [extra.id]
    wait_for(lambda: finished(*ids), what="every job settled")
    rows = {row.id: row for row in Job.objects.filter(id__in=ids)}
    assert {row.state for row in rows.values()} == {"completed"}
    assert rows[results[7].id].result == {"n": 7, "attempt": 1}
    assert rows[extra.id].result == 5
    assert Effect.objects.count() == 40
    assert running.worker.settled_count == 41
    assert (
        sum(JobCounter.objects.filter(name="tests.record").values_list("completed", flat=True))
        == 40
    )


def test_the_tenant_is_installed_around_the_body(make_worker) -> None:
    result = jobs.record.enqueue(n=1, org="org-9")
    make_worker()
    wait_for(lambda: finished(result.id))
    assert Effect.objects.get(job_id=result.id).label == "org-9"


def test_failed_attempts_retry_with_their_errors_kept(make_worker) -> None:
    result = jobs.flaky.enqueue(succeed_on=3)
    make_worker()
    wait_for(lambda: finished(result.id))
    row = Job.objects.get(id=result.id)
    assert (row.state, row.attempt, row.result) == ("completed", 3, 3)
    assert [e["attempt"] for e in row.errors] == [1, 2]
    assert row.errors[0]["error_class"] == "builtins.RuntimeError"
    assert row.errors[0]["message"] == "attempt 1 fails on purpose"
    assert "Traceback (most recent call last)" in row.errors[0]["traceback"]
    assert row.errors[0]["worker_id"]
    assert [(str(result.id), "completed", 3)] == jobs.SETTLED


def test_spent_attempts_dead_letter_or_drop(make_worker) -> None:
    dead = jobs.flaky.enqueue(succeed_on=99)
    dropped = jobs.flaky_dropped.enqueue()
    make_worker()
    wait_for(lambda: state(dead.id) == "failed" and state(dropped.id) is None)
    row = Job.objects.get(id=dead.id)
    assert row.attempt == 3 and len(row.errors) == 3
    wait_for(lambda: len(jobs.SETTLED) == 2)
    assert sorted(jobs.SETTLED) == sorted(
        [(str(dead.id), "dead-lettered", 3), (str(dropped.id), "dropped", 3)]
    )
    counters = JobCounter.objects.filter(name="tests.flaky_dropped").get()
    assert (counters.retried, counters.dropped) == (2, 1)


def test_terminal_fails_at_once(make_worker) -> None:
    result = jobs.terminal.enqueue()
    make_worker()
    wait_for(lambda: state(result.id) == "failed")
    row = Job.objects.get(id=result.id)
    assert row.attempt == 1
    assert row.errors[0]["error_class"] == "ultimat3_jobs.errors.Terminal"


def test_refused_input_fails_at_once(make_worker) -> None:
    job_id = new_job_id()
    PostgresDriver().job_enqueue(
        request=EnqueueRequest(
            id=job_id, name="tests.add", queue="default", input_json='{"a": 1, "zzz": 2}'
        )
    )
    make_worker()
    wait_for(lambda: state(job_id) == "failed")
    row = Job.objects.get(id=job_id)
    assert row.attempt == 1
    assert row.errors[0]["error_class"] == "ultimat3_jobs.errors.JobInputInvalid"


def test_a_job_this_worker_does_not_declare_is_retried_then_dead_lettered(make_worker) -> None:
    # A newer deploy may declare it; it is not failed on sight.
    job_id = new_job_id()
    PostgresDriver().job_enqueue(
        request=EnqueueRequest(
            id=job_id,
            name="tests.nobody_declared_this",
            queue="default",
            input_json="{}",
            max_attempts=2,
        )
    )
    make_worker()
    wait_for(lambda: state(job_id) == "failed", timeout=20)
    row = Job.objects.get(id=job_id)
    assert row.attempt == 2
    assert [e["error_class"] for e in row.errors] == ["ultimat3_jobs.errors.JobUnknown"] * 2


def test_an_error_message_with_nul_does_not_stall_the_settle(make_worker) -> None:
    bad = jobs.raises_text.enqueue()
    good = jobs.record.enqueue(n=1)
    make_worker()
    wait_for(lambda: finished(bad.id, good.id))
    error = Job.objects.get(id=bad.id).errors[0]
    assert "nul" in error["message"] and "\x00" not in error["message"]
    assert state(good.id) == "completed"


def test_a_result_that_is_not_json_fails_the_job(make_worker) -> None:
    result = jobs.not_json.enqueue()
    make_worker()
    wait_for(lambda: state(result.id) == "failed")
    error = Job.objects.get(id=result.id).errors[0]
    assert error["error_class"] == "ultimat3_jobs.errors.JobInputInvalid"
    assert "return value" in error["message"] and "set" in error["message"]


def test_async_bodies_run_on_the_event_loop(make_worker) -> None:
    result = jobs.async_echo.enqueue(value=[1, "two"])
    make_worker()
    wait_for(lambda: finished(result.id))
    assert Job.objects.get(id=result.id).result == {"value": [1, "two"], "attempt": 1}


def test_progress_is_stored_before_the_settle(make_worker) -> None:
    result = jobs.progress.enqueue(steps=4)
    make_worker()
    wait_for(lambda: finished(result.id))
    row = Job.objects.get(id=result.id)
    assert row.progress == {"current": 4, "total": 4}
    assert row.result == 4


@pytest.mark.parametrize("cooperative", [True, False])
def test_a_run_past_its_timeout_is_cancelled_then_failed(make_worker, cooperative: bool) -> None:
    result = jobs.slow.enqueue(cooperative=cooperative, seconds=3.0)
    make_worker()
    wait_for(lambda: state(result.id) == "failed", timeout=5)
    row = Job.objects.get(id=result.id)
    assert row.errors[-1]["error_class"] == "ultimat3_jobs.runtime.worker.execute.JobTimedOut"
    assert row.result is None


def test_cancelling_a_running_job_ends_it_cancelled_never_completed(make_worker) -> None:
    result = jobs.waits_for_cancel.enqueue(seconds=20)
    running = make_worker()
    wait_for(lambda: Effect.objects.filter(job_id=result.id).exists(), what="the body started")
    assert PostgresDriver().job_cancel(job_id=result.id)
    wait_for(lambda: not running.worker.running_attempts(), what="the attempt stopped")
    row = Job.objects.get(id=result.id)
    assert row.state == "cancelled"
    assert row.result is None


def test_stop_releases_what_still_runs_at_once(make_worker) -> None:
    result = jobs.waits_for_cancel.enqueue(seconds=60)
    running = make_worker(shutdown_grace=0.2)
    wait_for(lambda: Effect.objects.filter(job_id=result.id).exists())
    assert running.stop() == 0
    row = Job.objects.get(id=result.id)
    assert row.state == "queued"
    assert row.attempt == 0  # a released attempt is not counted
    assert row.claim_token is None


def test_stop_lets_short_jobs_finish_within_the_grace_period(make_worker) -> None:
    result = jobs.record.enqueue(sleep=0.3)
    running = make_worker(shutdown_grace=5.0)
    wait_for(lambda: running.worker.running_attempts())
    running.stop()
    assert state(result.id) == "completed"


def test_burst_exits_once_nothing_is_due(make_worker) -> None:
    results = jobs.record.enqueue_many([{"n": n} for n in range(10)])
    running = make_worker(burst=True)
    running.thread.join(20)
    assert not running.thread.is_alive()
    assert running.code == 0
    assert finished(*[r.id for r in results])


class CountingSubscriptions(PostgresDriver):
    """The PostgreSQL driver, counting its wake subscriptions."""

    subscriptions = 0

    def wake_subscribe(self, **options: Any) -> Any:
        self.subscriptions += 1
        return super().wake_subscribe(**options)


def test_a_burst_worker_that_finds_nothing_due_opens_no_wake(make_worker) -> None:
    driver = CountingSubscriptions()
    running = make_worker(driver=driver, burst=True, use_wake=True)
    running.thread.join(20)
    assert running.code == 0
    assert driver.subscriptions == 0  # neither its listen connection nor its probe's
    # A worker that waits for work subscribes before its first wait.
    driver = CountingSubscriptions()
    running = make_worker(driver=driver, use_wake=True)
    wait_for(lambda: running.worker.wake_live, what="the wake went live")
    assert driver.subscriptions == 1


def test_max_jobs_stops_the_worker_cleanly(make_worker) -> None:
    jobs.record.enqueue_many([{"n": n} for n in range(30)])
    running = make_worker(max_jobs=10, concurrency=2)
    running.thread.join(20)
    assert running.code == 0
    # No body starts past --max-jobs, even of jobs claimed ahead while the loop was busy: they
    # are given back.
    assert Job.objects.filter(state="completed").count() == 10
    assert Job.objects.filter(state="queued").count() == 20


def test_the_worker_registers_and_unregisters(make_worker) -> None:
    jobs.record.enqueue_many([{"n": n} for n in range(3)])
    running = make_worker(worker_id="test-worker-1")
    wait_for(lambda: JobWorker.objects.filter(id="test-worker-1").exists())
    row = JobWorker.objects.get(id="test-worker-1")
    assert row.slots == 4 and row.queues == ["default", "math"]
    running.stop()
    assert not JobWorker.objects.filter(id="test-worker-1").exists()


def test_a_draining_worker_reports_no_demand(make_worker) -> None:
    jobs.waits_for_cancel.enqueue(seconds=30)
    jobs.record.enqueue_many([{"n": n} for n in range(5)])
    running = make_worker(worker_id="drainer", concurrency=1, shutdown_grace=30.0)
    wait_for(lambda: JobWorker.objects.filter(id="drainer", demand__default__gt=0).exists())
    running.worker.request_stop(reason="test drain")
    wait_for(
        lambda: JobWorker.objects.filter(id="drainer", demand={"default": 0, "math": 0}).exists(),
        what="demand retracted to 0 while draining",
    )
    running.worker.request_stop(reason="second")
    running.thread.join(10)
    assert not running.thread.is_alive()


def test_a_second_stop_request_skips_the_grace_period(make_worker) -> None:
    result = jobs.waits_for_cancel.enqueue(seconds=60)
    running = make_worker(shutdown_grace=60.0)
    wait_for(lambda: Effect.objects.filter(job_id=result.id).exists())
    running.worker.request_stop(reason="first")
    assert not running.worker.stopped.wait(0.5), "the first request must wait for the drain"
    running.worker.request_stop(reason="second")
    assert running.worker.stopped.wait(5)
    assert state(result.id) == "queued"


def test_a_jobs_own_lease_overrides_the_visibility_timeout(make_worker) -> None:
    job_id = new_job_id()
    PostgresDriver().job_enqueue(
        request=EnqueueRequest(
            id=job_id,
            name="tests.waits_for_cancel",
            queue="default",
            input_json='{"seconds": 2}',
            lease_seconds=600,
        )
    )
    make_worker()
    wait_for(lambda: state(job_id) == "running")
    row = Job.objects.get(id=job_id)
    assert (row.lease_expires_at - row.started_at).total_seconds() > 590


def test_a_retry_due_sooner_than_the_idle_wait_wakes_the_worker(make_worker) -> None:
    # The first attempt runs 3 s, long enough for the idle backoff to climb far toward its
    # 10 s ceiling; with no wake, only the retry's own due time can cut that wait short.
    result = jobs.fails_once_slowly.enqueue(seconds=3.0)
    make_worker(use_wake=False, poll_ceiling=10.0, poll_ceiling_wake=10.0)
    wait_for(lambda: state(result.id) == "completed", timeout=30)
    row = Job.objects.get(id=result.id)
    assert (row.attempt, row.result) == (2, 2)
    failed_at = datetime.fromisoformat(row.errors[0]["at"])
    waited = (row.finished_at - failed_at).total_seconds()
    assert waited < 2.0, f"the 0.2 s retry completed {waited:.2f} s after the failure"
    print(f"\n[retry] the 0.2 s retry completed {waited:.2f} s after the first failure")
