"""What the limit tests read back from the database: run intervals by its own clock, lease rows
and counters."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from ultimat3_jobs.models import Job, JobCounter, JobLease


def finished(ids: Iterable[uuid.UUID]) -> bool:
    return not Job.objects.filter(id__in=list(ids), state__in=["queued", "running"]).exists()


def intervals(ids: Iterable[uuid.UUID]) -> list[tuple[datetime, datetime]]:
    rows = Job.objects.filter(id__in=list(ids)).values_list("started_at", "finished_at")
    return [(start, end) for start, end in rows]


def most_at_once(spans: list[tuple[datetime, datetime]]) -> int:
    """The most runs whose [started_at, finished_at) intervals overlap at one moment; a run that
    finishes at the moment another starts does not overlap it."""
    events = sorted([(end, -1) for _, end in spans] + [(start, 1) for start, _ in spans])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def most_in_a_window(starts: list[datetime], seconds: float) -> int:
    """The most starts within any window [t, t + seconds)."""
    ordered = sorted(starts)
    peak = 0
    first = 0
    for last, moment in enumerate(ordered):
        while (moment - ordered[first]).total_seconds() >= seconds:
            first += 1
        peak = max(peak, last - first + 1)
    return peak


def concurrency_rows() -> int:
    return JobLease.objects.filter(kind="concurrency").count()


def counter(name: str, column: str) -> int:
    rows = JobCounter.objects.filter(name=name, period="minute")
    return sum(rows.values_list(column, flat=True))
