"""The rescuer inside a running worker: a lost worker's attempts follow their job's own policy,
and a body that never started is not counted against its job."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.models import Job, JobCounter
from ultimat3_jobs.types import EnqueueRequest, new_job_id

ELSEWHERE = "elsewhere"
"""A queue the test worker does not claim from: only its rescuer touches these jobs."""


def lost_attempt(name: str, *, max_attempts: int) -> uuid.UUID:
    """A job whose spent attempt was claimed by a worker that is gone, its lease ended."""
    driver = PostgresDriver()
    job_id = new_job_id()
    driver.job_enqueue(
        request=EnqueueRequest(
            id=job_id, name=name, queue=ELSEWHERE, input_json="{}", max_attempts=max_attempts
        )
    )
    [claimed] = driver.job_claim(queues=[ELSEWHERE], limit=1, worker_id="gone", lease_seconds=30)
    assert claimed.id == job_id
    Job.objects.filter(id=job_id).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    return job_id


@pytest.mark.parametrize(
    ("name", "ending", "remains"),
    [("tests.flaky_dropped", "dropped", None), ("tests.flaky", "dead-lettered", "failed")],
    ids=["dead_letter=False", "dead_letter=True"],
)
def test_a_rescued_spent_job_ends_as_its_declaration_says(make_worker, name, ending, remains):
    job_id = lost_attempt(name, max_attempts=1)
    make_worker()
    wait_for(lambda: jobs.SETTLED, what="on_settled of the rescued job")
    assert [(str(job_id), ending, 1)] == jobs.SETTLED
    assert Job.objects.filter(id=job_id).values_list("state", flat=True).first() == remains
    counter = JobCounter.objects.get(name=name)
    assert (counter.dropped, counter.dead) == ((1, 0) if remains is None else (0, 1))


def test_a_rescued_retry_waits_its_backoff(make_worker):
    job_id = lost_attempt("tests.record", max_attempts=3)
    make_worker()
    wait_for(lambda: Job.objects.filter(id=job_id, state="queued").exists(), what="the rescue")
    row = Job.objects.get(id=job_id)
    [entry] = row.errors
    rescued_at = datetime.fromisoformat(entry["at"])
    # tests.record takes the default Retry: 1 s before attempt 2, jitter 10 %.
    assert (row.run_at - rescued_at).total_seconds() >= 0.9, (row.run_at, rescued_at)


def test_a_body_waiting_for_the_event_loop_is_marked_then_cleared(make_worker):
    blocker = jobs.async_blocks_loop.enqueue(seconds=1.5)
    waiting = jobs.async_echo.enqueue(value=1)
    make_worker(concurrency=2)
    seen = wait_for(
        lambda: Job.objects.filter(id=waiting.id, body_pending=True).exists(),
        timeout=5,
        what="the waiting body marked pending",
    )
    assert seen
    wait_for(
        lambda: Job.objects.filter(id__in=[blocker.id, waiting.id], state="completed").count() == 2,
        what="both jobs completed",
    )
    row = Job.objects.get(id=waiting.id)
    assert (row.body_pending, row.attempt, row.result) == (False, 1, {"value": 1, "attempt": 1})
