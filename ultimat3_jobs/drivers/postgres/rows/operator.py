"""Rows of the operator's reads (queue stats, counters, pauses, workers) by column name."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ultimat3_jobs.drivers.postgres.rows.result import Result, records
from ultimat3_jobs.serialization import decode_json
from ultimat3_jobs.types import (
    CounterRow,
    CounterTotal,
    JobState,
    Pause,
    QueueStats,
    WorkerRecord,
)

QUEUE_STATS = ("queue", "state", "jobs", "oldest_ready_seconds", "exact", "ready")


def queue_stats(result: Result) -> list[QueueStats]:
    """``queue_stats``'s rows, sorted by queue and state by code point (whatever the collation)."""
    stats = [
        QueueStats(
            queue=queue,
            state=JobState(state),
            jobs=int(jobs),
            oldest_ready_seconds=None if oldest is None else max(0.0, float(oldest)),
            exact=bool(exact),
            ready=int(ready),
        )
        for queue, state, jobs, oldest, exact, ready in result.picked(*QUEUE_STATS)
    ]
    stats.sort(key=lambda stat: (stat.queue, stat.state.value))
    return stats


def queue_demand(result: Result) -> dict[str, int]:
    """``queue_demand``'s rows: ready jobs per queue."""
    return {queue: int(ready) for queue, ready in result.picked("queue", "ready")}


COUNTS = ("completed", "retried", "dead", "dropped", "refused", "cancelled")


def counter_rows(result: Result) -> list[CounterRow]:
    """``counter_read``'s rows."""
    return [
        CounterRow(**dict(zip(("name", "period", "bucket", *COUNTS), values, strict=True)))
        for values in result.picked("name", "period", "bucket", *COUNTS)
    ]


def counter_totals(result: Result) -> list[CounterTotal]:
    """``counter_total``'s rows."""
    return [
        CounterTotal(
            name=name, **{column: int(value) for column, value in zip(COUNTS, counts, strict=True)}
        )
        for name, *counts in result.picked("name", *COUNTS)
    ]


def count(result: Result, column: str = "count") -> int:
    """A statement's one count (0 when it answered no row)."""
    first = result.first(column)
    return 0 if first is None else int(*first)


def pauses(result: Result) -> list[Pause]:
    """``pause_list``'s rows."""
    return [
        Pause(scope=scope, target=target, paused_by=by, reason=reason, created_at=created_at)
        for scope, target, by, reason, created_at in result.picked(
            "scope", "target", "paused_by", "reason", "created_at"
        )
    ]


def workers(result: Result) -> list[WorkerRecord]:
    """``worker_list``'s rows, whose columns are named as :class:`WorkerRecord`'s fields."""
    return records(result, WorkerRecord, queues=decode_json, demand=_demand, limits=decode_limits)


def _demand(text: str) -> dict[str, int]:
    return {queue: int(ready) for queue, ready in decode_json(text).items()}


def encode_limits(limits: Mapping[str, Mapping[str, int]] | None) -> str:
    """A worker's shed and refused counts per job name as the ``limits`` column's JSON."""
    clean = {what: {n: int(c) for n, c in names.items()} for what, names in (limits or {}).items()}
    return json.dumps(clean, sort_keys=True)


def decode_limits(text: str | None) -> dict[str, dict[str, int]]:
    found = decode_json(text) if text else {}
    return {what: {n: int(c) for n, c in names.items()} for what, names in found.items()}
