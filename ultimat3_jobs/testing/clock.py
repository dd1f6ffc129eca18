"""Time in tests: :func:`travel` makes delayed jobs due, :func:`fire_cron` fires cron jobs.

Due times compare against the store's clock (PostgreSQL's ``now()``), which a test cannot
freeze. So instead of moving the clock, :func:`travel` moves the jobs: every queued job that is
due later has its ``run_at`` brought earlier by the travelled time, exactly as if that much time
had passed for it. This is a test-only write (an ``UPDATE`` of ``x_jobs.run_at`` on PostgreSQL,
the memory driver's own test hook), never part of the package's runtime.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import F
from django.db.models.functions import Now

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.model.cron import idempotency_key
from ultimat3_jobs.model.definitions import JobDefinition
from ultimat3_jobs.model.options import EnqueueOptions
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.model.requests import build_request
from ultimat3_jobs.models import Job
from ultimat3_jobs.runtime.scheduler.scheduler import plan
from ultimat3_jobs.testing.queries import JobRef, enqueued_jobs, job_name
from ultimat3_jobs.types import CRON_SCOPE, EnqueueStatus, JobState


def _as_delta(by: float | timedelta) -> timedelta:
    if isinstance(by, timedelta):
        delta = by
    elif isinstance(by, (int, float)) and not isinstance(by, bool):
        delta = timedelta(seconds=by)
    else:
        raise TypeError(f"travel() takes seconds or a timedelta; got {by!r}")
    if delta < timedelta(0):
        raise ValueError(f"travel() goes forward only; got {by!r}")
    return delta


def travel(by: float | timedelta, *, driver: JobDriver | None = None) -> list[uuid.UUID]:
    """Bring every queued job that is due later ``by`` (seconds or a timedelta) closer, as if
    that much time had passed; answers the ids of the jobs that became due. Jobs already due,
    running or finished are left alone; a job enqueued after the call is not moved. Supported
    on the ``postgres`` and ``memory`` drivers."""
    delta = _as_delta(by)
    driver = driver or get_driver()
    if isinstance(driver, MemoryDriver):
        now = driver.now()
        later = [job for job in enqueued_jobs(driver=driver) if job.run_at > now]
        for job in later:
            driver._set_run_at(job.id, job.run_at - delta)
        return [job.id for job in later if job.run_at - delta <= now]
    if isinstance(driver, PostgresDriver):
        alias = driver.database or get_settings().database
        rows = Job.objects.using(alias).filter(state=JobState.QUEUED.value, run_at__gt=Now())
        due = list(rows.filter(run_at__lte=Now() + delta).values_list("id", flat=True))
        rows.update(run_at=F("run_at") - delta)
        return due
    raise NotImplementedError(
        f"travel() moves run_at on the postgres and memory drivers; the {driver.name!r} driver "
        "has no test hook for it"
    )


@dataclass(frozen=True, slots=True)
class FiredCron:
    """One occurrence :func:`fire_cron` dealt with: the job it enqueued (``created``), or the
    live job that already held the occurrence's key (``deduped``)."""

    name: str
    occurrence: datetime
    job_id: uuid.UUID
    status: EnqueueStatus


def _crons(job: JobRef | None) -> list[JobDefinition]:
    if job is None:
        return registry.crons()
    definition = registry.get(job_name(job)).definition
    if definition.schedule is None:
        raise TypeError(f"{definition.name!r} is a job, not a cron job (declare it with @cron)")
    return [definition]


def fire_cron(
    at: datetime,
    *,
    job: JobRef | None = None,
    since: datetime | None = None,
    driver: JobDriver | None = None,
) -> list[FiredCron]:
    """Enqueue what the scheduler would for the instant ``at`` (an aware datetime): each cron
    job (or only ``job``) with an occurrence exactly at ``at``; with ``since``, every
    occurrence after ``since`` and up to ``at``, as a scheduler that was away since ``since``
    and looks at ``at`` would, its catch-up policy and ``SCHEDULER_MISSED_AFTER_SECONDS``
    applied. Each job carries the occurrence's idempotency key, so firing one occurrence twice
    dedupes, as it does in the scheduler. Paused cron jobs fire nothing. The scheduler's own
    watermark is not moved. Answers what was fired, oldest first."""
    for name, value in (("at", at), ("since", since)):
        if value is not None and (not isinstance(value, datetime) or value.utcoffset() is None):
            raise ValueError(f"fire_cron() needs an aware datetime for {name}; got {value!r}")
    driver = driver or get_driver()
    definitions = _crons(job)
    paused = {p.target for p in driver.pause_list() if p.scope == CRON_SCOPE}
    missed_after = get_settings().scheduler_missed_after_seconds
    fired = []
    for definition in definitions:
        schedule = definition.schedule
        if schedule is None or definition.name in paused:
            continue
        if since is None:
            exact = schedule.next_after(at - timedelta(microseconds=1)) == at
            occurrences = [at] if exact else []
        else:
            occurrences = schedule.occurrences(since, at)
        for occurrence, dispatch in plan(schedule, occurrences, at, missed_after):
            if not dispatch:
                continue
            key = idempotency_key(definition.name, occurrence)
            options = EnqueueOptions(idempotency_key=key, tenant=None)  # as the scheduler fires
            request = build_request(definition, {}, options)
            result = driver.job_enqueue(request=request)
            fired.append(FiredCron(definition.name, occurrence, result.id, result.status))
    return sorted(fired, key=lambda f: (f.occurrence, f.name))
