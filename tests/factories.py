"""factory-boy factories for the rows of ``ultimat3_jobs.models``, for tests that need a row in
a given shape without driving it there through a driver (the admin, the operator surface, the
PostgreSQL-only tests).

A row made here is written by the ORM, not by the driver's statements: a test of what the
driver writes keeps going through the driver (``tests/drivers/support.py``). The defaults are
the ones an enqueue writes; the traits give the columns a claim, an ack or a final nack would
have set::

    JobFactory()                                  # queued, due now
    JobFactory(running=True)                      # claimed by worker-1, lease 30 s ahead
    JobFactory(completed=True, result={"n": 2})   # acked
    JobFactory(failed=True)                       # failed for good, one attempt error kept
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from ultimat3_jobs.models import (
    Job,
    JobCounter,
    JobPause,
    JobWorker,
    OutboxEntry,
    SchedulerLeader,
    SchedulerTask,
)
from ultimat3_jobs.types import new_job_id

WORKER_ID = "worker-1"
LEASE = timedelta(seconds=30)


def now() -> datetime:
    return timezone.now()


def minute_bucket(at: datetime | None = None) -> datetime:
    """The start of the minute of ``at`` (now by default): a counter row's bucket."""
    return (at or now()).replace(second=0, microsecond=0)


def attempt_error(attempt: int = 1, **overrides: Any) -> dict[str, Any]:
    """One element of ``x_jobs.errors``, as a failed attempt stores it."""
    return {
        "attempt": attempt,
        "error_class": "builtins.ValueError",
        "message": f"boom {attempt}",
        "traceback": f"Traceback (most recent call last):\n  attempt {attempt}\n",
        "worker_id": WORKER_ID,
        "at": now().isoformat(),
        **overrides,
    }


class EnqueuedFactory(DjangoModelFactory):
    """The columns an enqueue request fills, shared by a job row and a staged outbox row."""

    class Meta:
        abstract = True

    id = factory.LazyFunction(new_job_id)
    name = "tests.echo"
    queue = "default"
    priority = 0
    run_at = factory.LazyFunction(now)
    input = factory.LazyFunction(dict)
    max_attempts = 3


class JobFactory(EnqueuedFactory):
    """A job row; queued and due by default (``created_at`` is the database's ``now()``)."""

    class Meta:
        model = Job

    class Params:
        claimed = factory.Trait(
            attempt=1,
            claim_token=factory.LazyFunction(uuid.uuid4),
            worker_id=WORKER_ID,
            started_at=factory.LazyFunction(now),
        )
        running = factory.Trait(
            claimed=True,
            state="running",
            lease_expires_at=factory.LazyFunction(lambda: now() + LEASE),
        )
        completed = factory.Trait(
            claimed=True, state="completed", finished_at=factory.LazyFunction(now)
        )
        failed = factory.Trait(
            claimed=True,
            state="failed",
            finished_at=factory.LazyFunction(now),
            errors=factory.LazyAttribute(lambda job: [attempt_error(job.attempt)]),
        )
        cancelled = factory.Trait(state="cancelled", finished_at=factory.LazyFunction(now))

    state = "queued"
    attempt = 0
    errors = factory.LazyFunction(list)


class OutboxEntryFactory(EnqueuedFactory):
    """A staged, unpublished outbox row (the job an enqueue inside a transaction stages)."""

    class Meta:
        model = OutboxEntry

    class Params:
        published = factory.Trait(published_at=factory.LazyFunction(now))


class JobPauseFactory(DjangoModelFactory):
    """A paused queue (``scope="job"`` or ``"task"`` for the others)."""

    class Meta:
        model = JobPause

    scope = "queue"
    target = "default"
    paused_by = "tests"
    reason = ""


class JobWorkerFactory(DjangoModelFactory):
    """A live worker's heartbeat row."""

    class Meta:
        model = JobWorker

    id = factory.Sequence(lambda n: f"host-{n}:{1000 + n}")
    host = factory.LazyAttribute(lambda worker: worker.id.split(":")[0])
    pid = factory.LazyAttribute(lambda worker: int(worker.id.rsplit(":", 1)[-1]))
    queues = factory.LazyFunction(lambda: ["default"])
    slots = 2
    demand = factory.LazyFunction(dict)
    expires_at = factory.LazyFunction(lambda: now() + timedelta(seconds=60))


class JobCounterFactory(DjangoModelFactory):
    """One counter row, this minute's by default; every outcome zero unless given."""

    class Meta:
        model = JobCounter

    name = "tests.echo"
    period = "minute"
    bucket = factory.LazyFunction(minute_bucket)


class SchedulerTaskFactory(DjangoModelFactory):
    """A cron task's row, its watermark now (no fire yet)."""

    class Meta:
        model = SchedulerTask

    name = "tests.every_second"
    watermark = factory.LazyFunction(now)


class SchedulerLeaderFactory(DjangoModelFactory):
    """The scheduler's leader lease, live for the lease's length."""

    class Meta:
        model = SchedulerLeader

    name = "scheduler"
    holder = "sched-a"
    epoch = 1
    expires_at = factory.LazyFunction(lambda: now() + timedelta(seconds=3))
