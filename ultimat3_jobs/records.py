"""Records that cross the driver seam and say nothing of a job's lifecycle: pauses, workers,
the scheduler's lease and fires, settle counters, bulk results.

Layer L1 (core): imports the standard library only; ``ultimat3_jobs.types`` re-exports every
name, the import path callers use.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Literal

PauseScope = Literal["queue", "job", "task"]
PAUSE_SCOPES: tuple[PauseScope, ...] = ("queue", "job", "task")
CRON_SCOPE: PauseScope = "task"
"""The scope of a cron's pause. It keeps its stored name (``x_job_pauses.scope``), the one
place a cron is still called a task."""
CounterPeriod = Literal["minute", "hour"]
COUNTER_PERIODS: tuple[CounterPeriod, ...] = ("minute", "hour")


@dataclass(frozen=True, slots=True, kw_only=True)
class Pause:
    """A paused queue, job name or cron: a row the claim reads."""

    scope: PauseScope
    target: str
    paused_by: str
    reason: str
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerRecord:
    """A live worker process, as its last heartbeat described it."""

    id: str
    host: str
    pid: int
    queues: list[str]
    slots: int
    demand: dict[str, int]
    started_at: datetime
    heartbeat_at: datetime
    expires_at: datetime
    limits: dict[str, dict[str, int]] = field(default_factory=dict)
    """The jobs this worker shed and refused for their limits since it started, per job name:
    ``{"shed": {name: n}, "refused": {name: n}}`` (empty on a driver without a lease store)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CronState:
    """A cron's durable state: the last occurrence dealt with (fired or skipped), and the
    last one that dispatched a job."""

    name: str
    watermark: datetime
    last_fire_at: datetime | None
    last_job_id: uuid.UUID | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Leadership:
    """A held leader lease: the epoch fences every fire made under it."""

    epoch: int
    expires_at: datetime
    store_now: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class FireResult:
    """What one occurrence's statement did: whether the watermark moved (False: another
    scheduler dealt with it, or the lease was lost) and the job it inserted, if any."""

    moved: bool
    job_id: uuid.UUID | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SettleCounts:
    """How many attempts settled each way: the counting columns of ``x_job_counters``, in
    table order (:data:`COUNTER_OUTCOMES` names them)."""

    completed: int = 0
    retried: int = 0
    dead: int = 0
    dropped: int = 0
    refused: int = 0
    cancelled: int = 0

    def counts(self) -> dict[str, int]:
        """The six counts by outcome, in :data:`COUNTER_OUTCOMES` order."""
        return {outcome: getattr(self, outcome) for outcome in COUNTER_OUTCOMES}


COUNTER_OUTCOMES: tuple[str, ...] = tuple(count.name for count in fields(SettleCounts))
"""The columns of ``x_job_counters`` that count settles, in table order: the fields of
:class:`SettleCounts`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CounterRow(SettleCounts):
    """One row of ``x_job_counters``: how a job name's attempts settled in one bucket."""

    name: str
    period: CounterPeriod
    bucket: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class CounterTotal(SettleCounts):
    """A job name's settle counts summed over every bucket of every period."""

    name: str

    @classmethod
    def by_name(cls, counts: Iterable[tuple[str, Mapping[str, int]]]) -> list[CounterTotal]:
        """``counts``, pairs of a job name and its counts by outcome (one per counter row),
        summed per name, in name order: ``counter_total`` over every row, or a window's
        totals."""
        totals: dict[str, dict[str, int]] = {}
        for name, row in counts:
            total = totals.setdefault(name, dict.fromkeys(COUNTER_OUTCOMES, 0))
            for outcome in COUNTER_OUTCOMES:
                total[outcome] += row[outcome]
        return [cls(name=name, **totals[name]) for name in sorted(totals)]


@dataclass(frozen=True, slots=True)
class BulkResult:
    """What a bulk operator action did: how many jobs it ``moved``, and how many it was asked
    about (or found) but left as they were (``remaining``)."""

    moved: int
    remaining: int

    def __iter__(self) -> Iterator[int]:
        """``moved, remaining = result``."""
        return iter((self.moved, self.remaining))


LIMIT_KEYS = ("IN_FLIGHT", "PER_QUEUE", "PER_TENANT", "RATE", "BURST")
"""The per-process limiter's numbers (``LIMITS``); a missing one (or ``None``) does not limit."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessLimits:
    """``ULTIMAT3_JOBS["LIMITS"]``: what one worker process claims at most. ``in_flight``
    attempts in all, ``per_queue`` per queue, ``per_tenant`` per tenant, and ``rate`` claims per
    second with ``burst`` claims at once. ``None`` does not limit; 0 is a hard stop."""

    in_flight: int | None = None
    per_queue: int | None = None
    per_tenant: int | None = None
    rate: float | None = None
    burst: float | None = None
