"""What an operator reads: a page of jobs, one job in full (its secrets redacted), the queues
and counters at a glance. Answers plain JSON-ready dicts, so the CLI's ``--json``, its tables
and the admin show the same fields.

Layer L4 (processes).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from ultimat3_jobs.drivers.base import QUEUE_STATS_ROWS, JobDriver
from ultimat3_jobs.errors import JobNotFound
from ultimat3_jobs.operator.redaction import Disclosure, disclosure
from ultimat3_jobs.operator.verbs import parse_job_id
from ultimat3_jobs.types import (
    CounterRow,
    CounterTotal,
    JobPage,
    JobRecord,
    JobState,
    JobSummary,
    Pause,
    QueueStats,
)

STATS_COUNTER_WINDOW = timedelta(hours=1)
"""How far back :func:`stats` sums the counters."""


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


# -- one job ----------------------------------------------------------------------------------


def job_detail(
    driver: JobDriver, job_id: uuid.UUID | str, *, reveal: bool = False
) -> dict[str, Any]:
    """Everything about one job, for ``jobs show`` and the admin's page: its row, its errors,
    its input, progress and result, each as :mod:`~ultimat3_jobs.operator.redaction` lets a
    viewer with (``reveal``) or without the reveal right see it. ``redacted`` says whether
    anything may have been held back. Refused: :class:`~ultimat3_jobs.errors.JobNotFound`."""
    job_id = parse_job_id(job_id)
    record = driver.job_get(job_id=job_id)
    if record is None:
        raise JobNotFound(f"no job has id {job_id}")
    shown = disclosure(record.name, reveal=reveal)
    detail = record_as_json(record, shown=shown)
    detail["steps"] = steps_as_json(driver, job_id, shown)
    return detail


def steps_as_json(driver: JobDriver, job_id: uuid.UUID, shown: Disclosure) -> list[dict[str, Any]]:
    """A durable job's stored steps (one read), in the order they were first written, each
    output and error as the viewer may see them (redacted like the job's input); a wait says
    what it waits for (``event`` and ``key``, none for a sleep) and until when."""
    return [
        {
            "name": step.name,
            "seq": step.seq,
            "kind": step.kind,
            "status": step.status,
            "output": shown.payload(step.output),
            "error": None if step.error is None else shown.payload(step.error),
            "event": step.event,
            "key": step.key,
            "wait_since": _iso(step.wait_since),
            "wait_until": _iso(step.wait_until),
            "updated_at": _iso(step.updated_at),
        }
        for step in driver.step_get_many(job_id=job_id)
    ]


def _identity_json(job: JobRecord | JobSummary, shown: Disclosure) -> dict[str, Any]:
    """What a job's record and its list line both start with, as JSON."""
    return {
        "id": str(job.id),
        "name": job.name,
        "queue": job.queue,
        "state": job.state.value,
        "priority": job.priority,
        "run_at": _iso(job.run_at),
        "idempotency_key": shown.idempotency_key(job.idempotency_key),
        "tenant_id": job.tenant_id,
    }


def _attempt_json(job: JobRecord | JobSummary) -> dict[str, Any]:
    """Which attempt a job is at, of how many, and the worker that holds it, as JSON."""
    return {
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        "worker_id": job.worker_id,
    }


def _times_json(job: JobRecord | JobSummary) -> dict[str, Any]:
    return {
        "created_at": _iso(job.created_at),
        "started_at": _iso(job.started_at),
        "finished_at": _iso(job.finished_at),
    }


def record_as_json(
    record: JobRecord, *, reveal: bool = False, shown: Disclosure | None = None
) -> dict[str, Any]:
    """A :class:`~ultimat3_jobs.types.JobRecord` as a JSON-ready dict (see
    :func:`job_detail`); ``shown``, when given, is the disclosure to apply instead of the one
    ``reveal`` answers."""
    if shown is None:
        shown = disclosure(record.name, reveal=reveal)
    return {
        **_identity_json(record, shown),
        "enqueued_by": record.enqueued_by,
        **_attempt_json(record),
        "lease_expires_at": _iso(record.lease_expires_at),
        **_times_json(record),
        "input": shown.payload(record.input),
        "progress": shown.payload(record.progress),
        "result": shown.payload(record.result),
        "errors": [shown.error(error) for error in record.errors],
        "redacted": shown.redacted,
    }


# -- many jobs --------------------------------------------------------------------------------


def summary_as_json(job: JobSummary, *, reveal: bool = False) -> dict[str, Any]:
    """One line of a job list as a JSON-ready dict, its idempotency key and last error message
    as :mod:`~ultimat3_jobs.operator.redaction` lets the viewer see them."""
    shown = disclosure(job.name, reveal=reveal)
    return {
        **_identity_json(job, shown),
        **_attempt_json(job),
        "error_count": job.error_count,
        "last_error_class": job.last_error_class,
        "last_error_message": shown.error_message(job.last_error_message),
        **_times_json(job),
    }


def page_as_json(page: JobPage, *, reveal: bool = False) -> dict[str, Any]:
    """A page as a JSON-ready dict: ``jobs`` (see :func:`summary_as_json`) and ``next_cursor``
    (text, or ``None``)."""
    return {
        "jobs": [summary_as_json(job, reveal=reveal) for job in page.jobs],
        "next_cursor": None if page.next_cursor is None else str(page.next_cursor),
    }


# -- queues and counters ----------------------------------------------------------------------


def queues_overview(
    stats: Sequence[QueueStats], pauses: Iterable[Pause] = ()
) -> list[dict[str, Any]]:
    """Per queue (by name): its depth in every state (0 where it holds none), the states whose
    count is a lower bound (``at_least``: finished states are counted up to a limit per job
    name), how long its oldest due job has waited, and whether one of ``pauses`` (the store's
    pause list, every scope) pauses it. A paused queue that holds no job is listed too."""
    paused = {pause.target for pause in pauses if pause.scope == "queue"}
    queues: dict[str, dict[str, Any]] = {}

    def entry(queue: str) -> dict[str, Any]:
        if queue not in queues:
            queues[queue] = {
                "queue": queue,
                "depth": {state.value: 0 for state in JobState},
                "at_least": [],
                "oldest_ready_seconds": None,
                "paused": queue in paused,
            }
        return queues[queue]

    for stat in stats:
        row = entry(stat.queue)
        row["depth"][stat.state.value] = stat.jobs
        if not stat.exact:
            row["at_least"].append(stat.state.value)
        if stat.oldest_ready_seconds is not None:
            row["oldest_ready_seconds"] = stat.oldest_ready_seconds
    for queue in paused:
        entry(queue)
    return [queues[queue] for queue in sorted(queues)]


def name_totals(rows: Iterable[CounterRow]) -> list[dict[str, Any]]:
    """Per job name (by name), its counts summed over the counter rows ``rows``."""
    totals = CounterTotal.by_name((row.name, row.counts()) for row in rows)
    return [{"name": total.name, **total.counts()} for total in totals]


def stats(driver: JobDriver, *, since: datetime) -> dict[str, Any]:
    """The queues (see :func:`queues_overview`), the pauses, and the counters of each job name
    summed over the minute buckets from ``since``, in three reads."""
    pauses = driver.pause_list()
    queue_stats = driver.queue_stats(limit=QUEUE_STATS_ROWS)
    counters = driver.counter_read(since=since, period="minute")
    return {
        "queues": queues_overview(queue_stats, pauses),
        "pauses": [
            {
                "scope": pause.scope,
                "target": pause.target,
                "paused_by": pause.paused_by,
                "reason": pause.reason,
                "created_at": _iso(pause.created_at),
            }
            for pause in pauses
        ],
        "counters": {
            "since": _iso(since),
            "names": name_totals(counters),
        },
    }
