"""The memory driver's rows: one ``x_jobs`` row as a dataclass, the claim heaps' entry
types, and the helpers that read and write times as PostgreSQL would (``timestamptz`` in a UTC
session; its ``jsonb`` rules are ``drivers/jsonb.py``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ultimat3_jobs.carry import carry
from ultimat3_jobs.types import ExpiredAttempt, JobState

_COMPACT_MIN_STALE = 1024

# (-priority, run_at, seq, version, id): claim order, then insertion order.
_ReadyEntry = tuple[int, datetime, int, int, uuid.UUID]
# (run_at, seq, version, id): when the row falls due.
_DelayedEntry = tuple[datetime, int, int, uuid.UUID]
CounterKey = tuple[str, str, datetime]


@dataclass(slots=True, kw_only=True)
class _Row:
    """One row of ``x_jobs``, with the bookkeeping of the claim heaps."""

    id: uuid.UUID
    name: str
    queue: str
    state: JobState
    priority: int
    run_at: datetime
    input_json: str
    idempotency_key: str | None
    tenant_id: str | None
    enqueued_by: str | None
    max_attempts: int
    lease_seconds: int | None
    traceparent: str | None
    created_at: datetime
    seq: int
    # What an attempt writes: empty on a new row, as the table's column defaults leave it, and
    # emptied again (ATTEMPT_COLUMNS) when an operator requeues a finished row.
    attempt: int = 0
    claim_token: uuid.UUID | None = None
    worker_id: str | None = None
    lease_expires_at: datetime | None = None
    progress_json: str | None = None
    result_json: str | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # A heap entry is valid only while the row is queued and the entry carries this version.
    version: int = 0
    # Whether the valid entry sits in a ready heap (due) rather than the delayed heap.
    ready: bool = False
    body_pending: bool = False


ATTEMPT_COLUMNS = (
    "claim_token",
    "worker_id",
    "lease_expires_at",
    "started_at",
    "finished_at",
    "result_json",
    "progress_json",
)
"""The nullable columns of ``_Row`` an attempt fills in, which a requeue empties."""


def _as_utc(moment: datetime) -> datetime:
    # A naive value is read the way ``::timestamptz`` reads it in the connection's UTC zone.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _json_timestamp(moment: datetime) -> str:
    """A timestamp as PostgreSQL writes a ``timestamptz`` into ``jsonb`` in a UTC session:
    ISO 8601 with a ``T``, fractional seconds without trailing zeros, and ``+00:00``."""
    utc = _as_utc(moment)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "+00:00"


def _truncate(moment: datetime, period: str) -> datetime:
    """``date_trunc(period, moment)`` in a UTC session."""
    moment = moment.replace(second=0, microsecond=0)
    return moment.replace(minute=0) if period == "hour" else moment


def _expired(row: _Row) -> ExpiredAttempt:
    assert row.claim_token is not None  # a running row holds its claim token
    return carry(ExpiredAttempt, row, started=not row.body_pending)
