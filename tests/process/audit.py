"""Enqueue through the driver by name, and audit what became of the jobs, from the rows alone."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.db.models import QuerySet, Sum

from tests.limits.support import most_at_once
from tests.settings_process import PROCESS_TIMINGS
from tests.testapp.models import Effect
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.models import Job, JobCounter, JobLease
from ultimat3_jobs.types import EnqueueRequest, new_job_id

if TYPE_CHECKING:
    from tests.process.conftest import Workers

LEASE = float(PROCESS_TIMINGS["VISIBILITY_TIMEOUT_SECONDS"])
RESCUE = float(PROCESS_TIMINGS["RESCUE_INTERVAL_SECONDS"])
FREE_SLACK = 10.0
"""Beyond lease + rescue interval, how long a dead run's slot may stay held on a loaded machine."""


def enqueue(
    name: str,
    inputs: Iterable[dict[str, Any]],
    *,
    queue: str = "default",
    max_attempts: int = 3,
) -> list[uuid.UUID]:
    """Write one job per input under ``name`` (no declaration needed in this process)."""
    return enqueue_named(
        [(name, value) for value in inputs], queue=queue, max_attempts=max_attempts
    )


def enqueue_named(
    jobs: Iterable[tuple[str, dict[str, Any]]],
    *,
    queue: str = "default",
    max_attempts: int = 3,
) -> list[uuid.UUID]:
    """Write one job per ``(name, input)``, in the order given, in one batch (the order of
    their ``run_at``, the claim's order)."""
    requests = [
        EnqueueRequest(
            id=new_job_id(),
            name=name,
            queue=queue,
            input_json=json.dumps(value),
            max_attempts=max_attempts,
        )
        for name, value in jobs
    ]
    PostgresDriver().job_enqueue_many(requests=requests)
    return [request.id for request in requests]


def db_now() -> datetime:
    """The database's clock (the one ``finished_at`` and leases are written with)."""
    with connection.cursor() as cursor:
        cursor.execute("select clock_timestamp()")
        now: datetime = cursor.fetchone()[0]
    return now


def slot_freed_then_one_at_a_time(
    workers: Workers, slot: QuerySet[JobLease], ids: Sequence[uuid.UUID], killed_at: datetime
) -> None:
    """After a worker holding a slot of a key capped at 1 was killed at ``killed_at``
    (database time): the slot's rows (``slot``) are gone within lease + rescue interval, every
    job of ``ids`` completes on the workers left, no two of them ran at once by their rows'
    stamps, and no lease row is left."""
    deadline = time.monotonic() + LEASE + RESCUE + FREE_SLACK
    while slot.exists():
        assert time.monotonic() < deadline, "the dead worker's slot stayed held"
        time.sleep(0.05)
    assert (db_now() - killed_at).total_seconds() <= LEASE + RESCUE + FREE_SLACK
    deadline = time.monotonic() + 120
    while not settled(ids):
        workers.check_started()
        assert time.monotonic() < deadline, workers.report()
        time.sleep(0.05)
    assert set(Job.objects.filter(id__in=ids).values_list("state", flat=True)) == {"completed"}
    spans = list(Job.objects.filter(id__in=ids).values_list("started_at", "finished_at"))
    assert most_at_once(spans) == 1
    assert JobLease.objects.count() == 0


def states(ids: Sequence[uuid.UUID]) -> Counter[str]:
    return Counter(Job.objects.filter(id__in=ids).values_list("state", flat=True))


def settled(ids: Sequence[uuid.UUID]) -> bool:
    """No job of ``ids`` is queued or running any more."""
    return not Job.objects.filter(id__in=ids, state__in=["queued", "running"]).exists()


def completed_counter(name: str) -> int:
    """The ``completed`` counter of job name ``name``, summed over every minute bucket."""
    total = JobCounter.objects.filter(name=name, period="minute").aggregate(n=Sum("completed"))
    return int(total["n"] or 0)


@dataclass
class Audit:
    """What the rows say about a set of jobs that should all have completed once."""

    name: str
    expected: int
    by_state: Counter[str]
    missing: list[uuid.UUID] = field(default_factory=list)
    completed: int = 0
    counter_completed: int = 0
    effect_attempt_repeated: list[tuple[uuid.UUID, int]] = field(default_factory=list)
    result_attempt_mismatch: list[tuple[uuid.UUID, Any, int]] = field(default_factory=list)
    completed_without_effect: list[uuid.UUID] = field(default_factory=list)
    max_attempt: int = 0
    retried_jobs: int = 0

    @property
    def lost(self) -> int:
        """Enqueued jobs that did not end completed (missing, or queued/running/failed)."""
        return self.expected - self.completed

    def problems(self) -> list[str]:
        found = []
        if self.lost:
            found.append(
                f"{self.lost} lost: states {dict(self.by_state)}, {len(self.missing)} rows gone"
            )
        if self.counter_completed != self.completed:
            found.append(
                f"completed counter {self.counter_completed} != {self.completed} completed rows"
            )
        if self.by_state.get("running"):
            found.append(f"{self.by_state['running']} still running")
        if self.effect_attempt_repeated:
            found.append(f"effect rows repeat an attempt: {self.effect_attempt_repeated[:5]}")
        if self.result_attempt_mismatch:
            found.append(
                "result.attempt != the row's attempt (job, result, attempt): "
                f"{self.result_attempt_mismatch[:5]}"
            )
        if self.completed_without_effect:
            found.append(
                f"completed without an effect of the completing attempt: "
                f"{self.completed_without_effect[:5]}"
            )
        return found


def audit(name: str, ids: Sequence[uuid.UUID]) -> Audit:
    """Check every job of ``ids`` (all named ``name``, all expected to complete): none lost,
    none completed twice (the counter equals the completed rows, no attempt ran its body twice,
    the stored result is the one of the row's final attempt), none left running."""
    rows = {
        job_id: (state, attempt, result)
        for job_id, state, attempt, result in Job.objects.filter(id__in=ids).values_list(
            "id", "state", "attempt", "result"
        )
    }
    result = Audit(
        name=name,
        expected=len(ids),
        by_state=Counter(state for state, _, _ in rows.values()),
        missing=[job_id for job_id in ids if job_id not in rows],
    )
    result.completed = result.by_state.get("completed", 0)
    result.counter_completed = completed_counter(name)
    effects: dict[uuid.UUID, Counter[int]] = {}
    for job_id, attempt in Effect.objects.filter(job_id__in=ids).values_list("job_id", "attempt"):
        effects.setdefault(job_id, Counter())[attempt] += 1
    for job_id, attempts in effects.items():
        result.effect_attempt_repeated.extend(
            (job_id, attempt) for attempt, count in attempts.items() if count > 1
        )
    for job_id, (state, attempt, stored) in rows.items():
        result.max_attempt = max(result.max_attempt, attempt)
        result.retried_jobs += attempt > 1
        if state != "completed":
            continue
        if not isinstance(stored, dict) or stored.get("attempt") != attempt:
            result.result_attempt_mismatch.append((job_id, stored, attempt))
        if attempt not in effects.get(job_id, Counter()):
            result.completed_without_effect.append(job_id)
    return result
