"""The row factories of ``tests/factories.py`` write rows the PostgreSQL driver reads as the
state they claim to be: a running row acks with its claim token, a paused queue is skipped by
the claim, a counter row is counted, an outbox row is claimed by a relay."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.factories import (
    JobCounterFactory,
    JobFactory,
    JobPauseFactory,
    JobWorkerFactory,
    OutboxEntryFactory,
    SchedulerLeaderFactory,
    SchedulerTaskFactory,
    minute_bucket,
)
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.outbox import PostgresOutbox
from ultimat3_jobs.types import AckItem, JobState

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)


def test_a_queued_job_is_due_and_claimed_like_an_enqueued_one() -> None:
    driver = PostgresDriver()
    job = JobFactory(input={"n": 1})
    assert job.id.version == 7, "ids are uuid7, as the package makes them"
    (claimed,) = driver.job_claim(queues=["default"], limit=10, worker_id="w", lease_seconds=30)
    assert (claimed.id, claimed.input, claimed.attempt) == (job.id, {"n": 1}, 1)


def test_a_running_job_acks_with_its_claim_token() -> None:
    driver = PostgresDriver()
    job = JobFactory(running=True)
    record = driver.job_get(job_id=job.id)
    assert record.state == JobState.RUNNING and record.worker_id == "worker-1"
    assert record.lease_expires_at is not None and record.attempt == 1
    assert not driver.job_claim(queues=["default"], limit=10, worker_id="w", lease_seconds=30)
    items = [AckItem(job_id=job.id, claim_token=job.claim_token, result_json='{"ok": 1}')]
    assert driver.job_ack_many(items=items) == {job.id}
    assert driver.job_get(job_id=job.id).result == {"ok": 1}


def test_finished_jobs_read_as_their_state() -> None:
    driver = PostgresDriver()
    completed = driver.job_get(job_id=JobFactory(completed=True, result=5).id)
    assert (completed.state, completed.result) == (JobState.COMPLETED, 5)
    assert completed.finished_at is not None and completed.lease_expires_at is None
    failed = driver.job_get(job_id=JobFactory(failed=True, attempt=3).id)
    assert failed.state == JobState.FAILED and failed.finished_at is not None
    assert [(e["attempt"], e["error_class"]) for e in failed.errors] == [(3, "builtins.ValueError")]
    cancelled = driver.job_get(job_id=JobFactory(cancelled=True).id)
    assert cancelled.state == JobState.CANCELLED


def test_a_paused_queue_is_skipped_by_the_claim() -> None:
    driver = PostgresDriver()
    JobFactory(queue="mail")
    JobPauseFactory(target="mail")
    assert [(p.scope, p.target) for p in driver.pause_list()] == [("queue", "mail")]
    assert not driver.job_claim(queues=["mail"], limit=10, worker_id="w", lease_seconds=30)


def test_counters_workers_and_scheduler_rows_read_back() -> None:
    driver = PostgresDriver()
    JobCounterFactory(completed=4, dead=1)
    JobCounterFactory(period="hour", bucket=minute_bucket().replace(minute=0) - HOUR, completed=1)
    (total,) = driver.counter_total()
    assert (total.name, total.completed, total.dead) == ("tests.echo", 5, 1)
    worker = JobWorkerFactory()
    assert [(w.id, w.host, w.pid) for w in driver.worker_list()] == [
        (worker.id, worker.host, worker.pid)
    ]
    task = SchedulerTaskFactory()
    assert driver.scheduler_cron_sync(names=[task.name])[task.name].watermark == task.watermark
    assert SchedulerLeaderFactory().holder == "sched-a"


def test_an_outbox_row_is_claimed_by_a_relay_until_published() -> None:
    outbox = PostgresOutbox()
    entry = OutboxEntryFactory(input={"n": 2})
    OutboxEntryFactory(published=True)
    (claimed,) = outbox.outbox_claim(relay_id="r", limit=10, lease_seconds=30)
    assert claimed.id == entry.id
