"""Durable steps in a real worker, against the real database (commits matter): suspension that is
not an attempt, events by the database's clock, compensation only for a job failed for good,
and a body's rollback that does not erase a stored step."""

from __future__ import annotations

import time

import pytest

from tests.steps import bodies
from tests.testapp import jobs as test_jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs import send_event
from ultimat3_jobs.models import Job, JobCounter, JobStep


@pytest.fixture(autouse=True)
def _fresh_calls():
    bodies.CALLS.clear()
    bodies.SETTLED.clear()


def row(job_id):
    return Job.objects.get(id=job_id)


def settled(job_id):
    return row(job_id).state in ("completed", "failed", "cancelled")


def steps(job_id):
    return {s.name: s for s in JobStep.objects.filter(job_id=job_id)}


def counted(name):
    totals = {"completed": 0, "retried": 0, "dead": 0, "dropped": 0}
    for counter in JobCounter.objects.filter(name=name):
        for key in totals:
            totals[key] += getattr(counter, key)
    return totals


def test_a_sleep_frees_the_slot_and_resumes_without_spending_an_attempt(make_worker):
    sleeping = bodies.sleeper.enqueue(seconds=3.0)
    make_worker(concurrency=1)
    wait_for(lambda: steps(sleeping.id).get("nap"), what="the sleep stored")
    other = test_jobs.noop.enqueue()
    # The one slot runs the other job while the first sleeps (by the database's clock: the
    # other job started before the sleep's end).
    wait_for(lambda: settled(other.id), what="another job ran")
    assert row(other.id).started_at < steps(sleeping.id)["nap"].wait_until
    wait_for(lambda: settled(sleeping.id), what="the sleeper finished")
    done = row(sleeping.id)
    assert (done.state, done.attempt, done.errors) == ("completed", 1, [])
    assert done.result == {"first": [1, 2], "second": {"attempt": 1}}
    assert bodies.calls_of(sleeping.id) == ["before", "after"]
    assert [(str(sleeping.id), "completed", 1)] == bodies.SETTLED
    assert counted("tests.s.sleeper") == {"completed": 1, "retried": 0, "dead": 0, "dropped": 0}
    nap = steps(sleeping.id)["nap"]
    assert (nap.wait_until - nap.wait_since).total_seconds() == pytest.approx(3.0, abs=0.01)


def test_an_event_sent_after_the_wait_resumes_the_job_with_its_payload(make_worker):
    waiting = bodies.waiter.enqueue(event="order.paid", key="o-1")
    make_worker()
    wait_for(lambda: row(waiting.id).state == "queued" and steps(waiting.id), what="waiting")
    assert send_event("order.paid", key="o-2", payload={"no": 1}) == 0
    sent = time.monotonic()
    assert send_event("order.paid", key="o-1", payload={"amount": 12}) == 1
    wait_for(lambda: settled(waiting.id), timeout=5, what="resumed")
    assert time.monotonic() - sent < 2.0
    done = row(waiting.id)
    assert (done.state, done.attempt, done.result) == ("completed", 1, {"amount": 12})
    assert bodies.calls_of(waiting.id) == ["resumed:{'amount': 12}"]


def test_a_wait_with_no_event_answers_none_at_its_timeout(make_worker):
    waiting = bodies.waiter.enqueue(event="never.sent", timeout=0.5)
    make_worker()
    wait_for(lambda: settled(waiting.id), timeout=10, what="timed out")
    done = row(waiting.id)
    assert (done.state, done.result, done.attempt) == ("completed", None, 1)
    wait = steps(waiting.id)["wait"]
    assert wait.status == "done" and wait.updated_at >= wait.wait_until


def test_one_send_resumes_many_waiting_jobs(make_worker):
    waiting = [bodies.waiter.enqueue(event="batch.ready", key="b") for _ in range(40)]
    ids = [w.id for w in waiting]
    make_worker(concurrency=4)
    wait_for(
        lambda: (
            JobStep.objects.filter(job_id__in=ids, status="waiting").count() == 40
            and not Job.objects.filter(id__in=ids, state="running").exists()
        ),
        what="all waiting",
    )
    assert send_event("batch.ready", key="b", payload=[1]) == 40
    wait_for(
        lambda: Job.objects.filter(id__in=ids, state="completed").count() == 40,
        what="all resumed",
    )
    assert set(Job.objects.filter(id__in=ids).values_list("attempt", flat=True)) == {1}


def test_an_async_body_awaits_its_steps_and_its_wait(make_worker):
    waiting = bodies.async_waiter.enqueue(event="async.go")
    make_worker()
    wait_for(lambda: row(waiting.id).state == "queued" and "wait" in steps(waiting.id), what="w")
    send_event("async.go", payload="went")
    wait_for(lambda: settled(waiting.id), what="resumed")
    assert row(waiting.id).result == {"value": 42, "got": "went"}
    assert bodies.calls_of(waiting.id) == ["first"]


def test_a_rollback_of_the_body_transaction_does_not_erase_a_stored_step(make_worker):
    from tests.testapp.models import Effect

    job = bodies.rollback.enqueue()
    make_worker()
    wait_for(lambda: settled(job.id), what="done")
    done = row(job.id)
    assert (done.state, done.attempt, done.result) == ("completed", 2, 1)
    assert bodies.calls_of(job.id) == ["inside"], "the step stored in attempt 1 is replayed"
    assert steps(job.id)["inside"].output == 1
    assert list(Effect.objects.filter(job_id=job.id).values_list("attempt", flat=True)) == [2]


def test_a_saga_failing_for_good_unwinds_in_reverse_once(make_worker):
    job = bodies.saga.enqueue(fail_at=4)
    make_worker()
    wait_for(lambda: settled(job.id), what="failed")
    done = row(job.id)
    assert (done.state, done.attempt) == ("failed", 2)
    assert bodies.calls_of(job.id) == [
        "step1", "step2", "step3", "step4",  # attempt 1: a retry unwinds nothing
        "step4",  # attempt 2 replays 1-3
        "undo3:30", "undo2:20", "undo1:10",
    ]  # fmt: skip
    stored = steps(job.id)
    assert {name: s.status for name, s in stored.items()} == {
        "step1": "compensated",
        "step2": "compensated",
        "step3": "compensated",
    }
    assert [e["message"] for e in done.errors] == ["step 4 failed", "step 4 failed"]
    assert [(str(job.id), "dead-lettered", 2)] == bodies.SETTLED


def test_a_compensation_that_raises_fails_the_job_with_its_error_kept(make_worker):
    job = bodies.saga.enqueue(fail_at=3, compensation_fails=1)
    make_worker()
    wait_for(lambda: settled(job.id), what="failed")
    done = row(job.id)
    assert done.state == "failed"
    assert bodies.calls_of(job.id)[-2:] == ["undo2:20", "undo1:10"]
    assert "undo 1 failed" in done.errors[-1]["message"]
    assert "step 3 failed" in done.errors[-1]["message"]
    assert {n: s.status for n, s in steps(job.id).items()} == {
        "step1": "done",
        "step2": "compensated",
    }


def test_a_once_step_interrupted_fails_the_job_for_good(make_worker):
    job = bodies.once_then_crash.enqueue()
    make_worker()
    wait_for(lambda: settled(job.id), what="failed")
    done = row(job.id)
    assert (done.state, done.attempt) == ("failed", 2)
    assert "X_STEP_ONCE_INTERRUPTED" in done.errors[-1]["message"]
    assert bodies.calls_of(job.id) == ["charge"]


def test_send_event_is_refused_from_a_cancelled_body():
    from ultimat3_jobs.errors import JobAborted
    from ultimat3_jobs.model.context import JobContext, install_job, uninstall_job

    ctx = JobContext.for_direct_call("tests.x")
    ctx.cancelled.set()
    token = install_job(ctx)
    try:
        with pytest.raises(JobAborted):
            send_event("e")
    finally:
        uninstall_job(token)
