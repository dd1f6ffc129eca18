"""What an operator reads: a page of jobs, one job in full (its secrets redacted), the queues
and counters at a glance. Answers plain JSON-ready dicts, so the CLI's ``--json``, its tables
and the admin show the same fields.

Layer L4 (processes).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ultimat3_jobs.drivers.base import QUEUE_STATS_ROWS, JobDriver
from ultimat3_jobs.errors import JobNotFound, JobPageInvalid
from ultimat3_jobs.operator.verbs import parse_job_id
from ultimat3_jobs.registry import registry
from ultimat3_jobs.types import (
    COUNTER_OUTCOMES,
    JobPage,
    JobRecord,
    JobState,
    JobSummary,
    QueueStats,
)

REDACTED = "[redacted]"
"""What a redacted value reads as."""

SENSITIVE_KEY = re.compile(r"password|secret|token|api[-_]?key|authorization|cookie|card", re.I)
"""Object keys redacted in every job, at any depth, whatever the job declares: a key that
contains one of these words, in any case (``card_number``, ``X-Api-Key``, ``APIKEY``,
``refresh_token``, ``Authorization``)."""

STATS_COUNTER_WINDOW = timedelta(hours=1)
"""How far back :func:`stats` sums the counters."""


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


# -- redaction --------------------------------------------------------------------------------


def sensitive_fields(name: str) -> frozenset[str]:
    """The input fields job name ``name`` declares ``sensitive``; none when this process does
    not declare that name."""
    if name not in registry:
        return frozenset()
    return registry.get(name).definition.sensitive


def redact(value: Any, fields: Iterable[str] = ()) -> Any:
    """``value`` with the value of every object key that is one of ``fields`` or matches
    :data:`SENSITIVE_KEY` replaced by :data:`REDACTED`, at any depth (inside lists too). The
    value given is not changed."""
    named = frozenset(fields)
    return _redact(value, named)


def _redact(value: Any, named: frozenset[str]) -> Any:
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if key in named or SENSITIVE_KEY.search(str(key))
            else _redact(item, named)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_redact(item, named) for item in value]
    return value


# -- one job ----------------------------------------------------------------------------------


def job_detail(
    driver: JobDriver, job_id: uuid.UUID | str, *, reveal: bool = False
) -> dict[str, Any]:
    """Everything about one job, for ``jobs show`` and the admin's page: its row, its errors
    with their tracebacks, and its input, progress and result with the job's sensitive fields
    and every :data:`SENSITIVE_KEY` redacted unless ``reveal``. ``redacted`` says whether
    redaction was applied. Refused: :class:`~ultimat3_jobs.errors.JobNotFound`."""
    job_id = parse_job_id(job_id)
    record = driver.job_get(job_id=job_id)
    if record is None:
        raise JobNotFound(f"no job has id {job_id}")
    return record_as_json(record, reveal=reveal)


def record_as_json(record: JobRecord, *, reveal: bool = False) -> dict[str, Any]:
    """A :class:`~ultimat3_jobs.types.JobRecord` as a JSON-ready dict (see
    :func:`job_detail`)."""
    fields = sensitive_fields(record.name)

    def shown(value: Any) -> Any:
        return value if reveal else redact(value, fields)

    return {
        "id": str(record.id),
        "name": record.name,
        "queue": record.queue,
        "state": record.state.value,
        "priority": record.priority,
        "run_at": _iso(record.run_at),
        "idempotency_key": record.idempotency_key,
        "tenant_id": record.tenant_id,
        "enqueued_by": record.enqueued_by,
        "attempt": record.attempt,
        "max_attempts": record.max_attempts,
        "worker_id": record.worker_id,
        "lease_expires_at": _iso(record.lease_expires_at),
        "created_at": _iso(record.created_at),
        "started_at": _iso(record.started_at),
        "finished_at": _iso(record.finished_at),
        "input": shown(record.input),
        "progress": shown(record.progress),
        "result": shown(record.result),
        "errors": list(record.errors),
        "redacted": not reveal,
    }


# -- many jobs --------------------------------------------------------------------------------


def summary_as_json(job: JobSummary) -> dict[str, Any]:
    """One line of a job list as a JSON-ready dict."""
    return {
        "id": str(job.id),
        "name": job.name,
        "queue": job.queue,
        "state": job.state.value,
        "priority": job.priority,
        "run_at": _iso(job.run_at),
        "idempotency_key": job.idempotency_key,
        "tenant_id": job.tenant_id,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        "worker_id": job.worker_id,
        "error_count": job.error_count,
        "last_error_class": job.last_error_class,
        "last_error_message": job.last_error_message,
        "created_at": _iso(job.created_at),
        "started_at": _iso(job.started_at),
        "finished_at": _iso(job.finished_at),
    }


def job_page(
    driver: JobDriver,
    *,
    states: Sequence[str] | None = None,
    queues: Sequence[str] | None = None,
    names: Sequence[str] | None = None,
    tenant: str | None = None,
    search: str | None = None,
    after: uuid.UUID | str | None = None,
    limit: int = 50,
) -> JobPage:
    """One page of jobs, newest first (see
    :meth:`~ultimat3_jobs.drivers.base.JobDriver.job_list`); ``after`` may be the cursor's
    text. Refused: :class:`~ultimat3_jobs.errors.JobPageInvalid`."""
    if after is not None and not isinstance(after, uuid.UUID):
        try:
            after = uuid.UUID(str(after).strip())
        except ValueError:
            raise JobPageInvalid(
                f"a cursor is the id of the last job of a page; got {after!r}"
            ) from None
    return driver.job_list(
        states=states,
        queues=queues,
        names=names,
        tenant=tenant,
        search=search,
        after=after,
        limit=limit,
    )


def page_as_json(page: JobPage) -> dict[str, Any]:
    """A page as a JSON-ready dict: ``jobs`` and ``next_cursor`` (text, or ``None``)."""
    return {
        "jobs": [summary_as_json(job) for job in page.jobs],
        "next_cursor": None if page.next_cursor is None else str(page.next_cursor),
    }


# -- queues and counters ----------------------------------------------------------------------


def queues_overview(
    stats: Sequence[QueueStats], paused: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """Per queue (by name): its depth in every state (0 where it holds none), the states whose
    count is a lower bound (``at_least``: finished states are counted up to a limit per job
    name), how long its oldest due job has waited, and whether it is paused. A paused queue
    that holds no job is listed too."""
    paused = set(paused)
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


def stats(driver: JobDriver, *, since: datetime) -> dict[str, Any]:
    """The queues (see :func:`queues_overview`), the pauses, and the counters of each job name
    summed over the minute buckets from ``since``, in three reads."""
    pauses = driver.pause_list()
    queue_stats = driver.queue_stats(limit=QUEUE_STATS_ROWS)
    totals: dict[str, dict[str, int]] = {}
    for row in driver.counter_read(since=since, period="minute"):
        total = totals.setdefault(row.name, dict.fromkeys(COUNTER_OUTCOMES, 0))
        for outcome, count in row.counts().items():
            total[outcome] += count
    return {
        "queues": queues_overview(
            queue_stats, [pause.target for pause in pauses if pause.scope == "queue"]
        ),
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
            "names": [{"name": name, **totals[name]} for name in sorted(totals)],
        },
    }
