"""``run_enqueued``: run the due jobs inline, in the test's own thread, until none is due.

The attempt goes through the worker's own pieces: ``job_claim`` (paused queues and job names
stay queued), the execute functions (signature check, tenant installed, ``Terminal`` and refused
input fail at once), and the settler (one retry policy: backoff, dead letter, drop,
``on_settled``). What differs from a worker process, and why:

* the body runs on the calling thread, so on PostgreSQL it uses the test's connection and sees
  the test's uncommitted rows;
* inside a transaction (pytest-django's default ``django_db``) each body runs in a savepoint:
  a body that raises leaves no writes behind, and a database error in a body cannot break the
  test's transaction (a worker, in autocommit, keeps the writes a body made before it raised);
* there is no lease to keep: a body's ``timeout`` is not enforced;
* ``async def`` bodies run to completion on an event loop of their own (``asyncio.run``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.model.steps import InlineWriter
from ultimat3_jobs.runtime.steps.attempt import bind_steps
from ultimat3_jobs.runtime.worker.attempt import Attempt, Outcome, context_for
from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.runtime.worker.execute import call_sync, failure, finish, prepare, run_async
from ultimat3_jobs.runtime.worker.settle import Settler
from ultimat3_jobs.serialization import encode_json
from ultimat3_jobs.types import AttemptError, ClaimedJob

RUN_LIMIT_DEFAULT = 1000
"""``run_enqueued`` refuses to run more attempts than this in one call (a job that enqueues
itself again, due now, would never let it return)."""

WORKER_ID = "testing:run_enqueued"
LEASE_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What one :func:`run_enqueued` did, by job id, in the order the attempts ended.

    ``retried`` jobs were put back with a backoff (due later, so not run again unless their
    backoff is zero); ``failed`` ones are dead-lettered, ``dropped`` ones failed for good and
    were deleted (``dead_letter=False``). A job retried and then completed in the same call is
    in both lists. ``errors`` holds the last error of each job that failed an attempt."""

    completed: tuple[uuid.UUID, ...] = ()
    retried: tuple[uuid.UUID, ...] = ()
    failed: tuple[uuid.UUID, ...] = ()
    dropped: tuple[uuid.UUID, ...] = ()
    errors: Mapping[uuid.UUID, AttemptError] = field(default_factory=dict)

    @property
    def attempts(self) -> int:
        """How many attempts ran."""
        return len(self.completed) + len(self.retried) + len(self.failed) + len(self.dropped)

    def __str__(self) -> str:
        text = (
            f"{self.attempts} attempt(s): {len(self.completed)} completed, "
            f"{len(self.retried)} retried, {len(self.failed)} failed, "
            f"{len(self.dropped)} dropped"
        )
        for job_id, error in self.errors.items():
            text += f"\n  - {job_id} attempt {error.attempt}: {error.error_class}: {error.message}"
        return text


class _InlineHooks:
    """Runs ``on_settled`` hooks at once on the calling thread (the worker hands them to a
    pool thread, which would not see the test's transaction)."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        fn(*args)


class _InlineSettler(Settler):
    """The worker's settler, driven by hand: ``settle`` writes one outcome now. A write that
    fails raises at once (a worker retries it until the store answers; a test wants the
    error)."""

    def settle(self, outcome: Outcome) -> None:
        self._settle([outcome])

    def _write[T](self, write: Callable[[], T]) -> T:
        return write()


class _Tally:
    def __init__(self) -> None:
        self.ended: dict[str, list[uuid.UUID]] = {
            "completed": [],
            "retry": [],
            "fail": [],
            "drop": [],
        }
        self.errors: dict[uuid.UUID, AttemptError] = {}

    def done(self, attempt: Attempt, how: str) -> None:
        self.ended.setdefault(how, []).append(attempt.job.id)

    def summary(self) -> RunSummary:
        return RunSummary(
            completed=tuple(self.ended["completed"]),
            retried=tuple(self.ended["retry"]),
            failed=tuple(self.ended["fail"]),
            dropped=tuple(self.ended["drop"]),
            errors=dict(self.errors),
        )


def _attempt(job: ClaimedJob, driver: JobDriver) -> Attempt:
    handle = registry.find(job.name)
    definition = handle.definition if handle else None
    ctx = context_for(job, definition)
    attempt = Attempt(job=job, definition=definition, ctx=ctx)

    def keep_progress(value: Any) -> None:
        # Stored by the settler just before the settle, as the worker does for async bodies.
        attempt.pending_progress = encode_json(
            value, root="progress", max_depth=32, max_bytes=65536
        )

    ctx._on_progress = keep_progress
    # Steps are written on the test's own connection, inside its transaction (and rolled back
    # with a failed attempt's savepoint), never by another thread that could not see the job.
    is_async = attempt.definition is not None and attempt.definition.is_async
    bind_steps(
        ctx, driver=driver, claim_token=job.claim_token, is_async=is_async, writer=InlineWriter()
    )
    return attempt


def _call_body(attempt: Attempt) -> Outcome:
    assert attempt.definition is not None
    if attempt.definition.is_async:
        return asyncio.run(run_async(attempt, worker_id=WORKER_ID))
    ended, result = call_sync(attempt, worker_id=WORKER_ID)
    return ended if ended is not None else finish(attempt, result, worker_id=WORKER_ID)


class _RolledBack(Exception):
    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome


def run_attempt(attempt: Attempt, *, database: str) -> Outcome:
    """Run one claimed attempt's body here and answer how it ended (never raises for the
    body's errors). Inside a transaction on ``database`` the body runs in a savepoint, rolled
    back when the attempt fails."""
    refused = prepare(attempt)
    if refused is not None:
        return failure(attempt, refused, worker_id=WORKER_ID)
    try:
        if not transaction.get_connection(database).in_atomic_block:
            return _call_body(attempt)
        with transaction.atomic(using=database):
            outcome = _call_body(attempt)
            if outcome.kind == "failed":
                raise _RolledBack(outcome)
            return outcome
    except _RolledBack as rolled_back:
        return rolled_back.outcome
    except Exception as exc:
        return failure(attempt, exc, worker_id=WORKER_ID)


def _queued_queues(driver: JobDriver) -> list[str]:
    queues: dict[str, None] = {}
    cursor = None
    while True:
        page = driver.job_list(states=["queued"], after=cursor, limit=500)
        queues.update((job.queue, None) for job in page.jobs)
        cursor = page.next_cursor
        if cursor is None:
            return list(queues)


def run_enqueued(
    queue: str | None = None,
    *,
    limit: int = RUN_LIMIT_DEFAULT,
    driver: JobDriver | None = None,
) -> RunSummary:
    """Run every due job of ``queue`` (every queue when ``None``), one at a time in claim
    order (priority, then due time), inline, until none is due; jobs the bodies enqueue are
    run too when they are due. Jobs due later (a delay, a retry's backoff) are left queued:
    :func:`~ultimat3_jobs.testing.travel` makes them due. Answers a :class:`RunSummary`.

    Raises ``AssertionError`` after ``limit`` attempts with jobs still due."""
    driver = driver or get_driver()
    database = driver.database or get_settings().database
    tally = _Tally()
    settler = _InlineSettler(
        driver=driver,
        config=WorkerConfig(queues=("default",), concurrency=1, worker_id=WORKER_ID),
        on_done=tally.done,
        hooks=_InlineHooks(),  # type: ignore[arg-type]  # duck-typed: only submit() is used
    )
    for _ in range(limit):
        queues = [queue] if queue is not None else _queued_queues(driver)
        if not queues:
            return tally.summary()
        claimed = driver.job_claim(
            queues=queues, limit=1, worker_id=WORKER_ID, lease_seconds=LEASE_SECONDS
        )
        if not claimed:
            return tally.summary()
        attempt = _attempt(claimed[0], driver)
        outcome = run_attempt(attempt, database=database)
        if outcome.error is not None:
            tally.errors[attempt.job.id] = outcome.error
        settler.settle(outcome)
    still = [queue] if queue is not None else _queued_queues(driver)
    if still and any(driver.queue_demand(queues=still).values()):
        raise AssertionError(
            f"run_enqueued ran {limit} attempts and jobs are still due (a job that enqueues "
            f"itself again, due now?); {tally.summary()}"
        )
    return tally.summary()
