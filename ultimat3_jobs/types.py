"""Value types that cross the driver seam: frozen, slotted dataclasses and enums. Layer L1
(core): rows cross the seam as these types, never as ORM objects or dicts.
"""

from __future__ import annotations

import enum
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ultimat3_jobs.frozen import quick_init

# Re-exported: callers import these from ultimat3_jobs.types.
from ultimat3_jobs.records import (  # noqa: F401
    COUNTER_OUTCOMES,
    COUNTER_PERIODS,
    CRON_SCOPE,
    PAUSE_SCOPES,
    BulkResult,
    CounterPeriod,
    CounterRow,
    CounterTotal,
    CronState,
    FireResult,
    Leadership,
    Pause,
    PauseScope,
    SettleCounts,
    WorkerRecord,
)


class JobState(enum.StrEnum):
    """Where a job is in its life. ``queued`` and ``running`` are the live states."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


LIVE_STATES: frozenset[JobState] = frozenset({JobState.QUEUED, JobState.RUNNING})
FINISHED_STATES: frozenset[JobState] = frozenset(
    {JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED}
)

PRIORITY_MIN = -100
PRIORITY_MAX = 100
PRIORITY_DEFAULT = 0
"""Priorities run from -100 to 100; a larger number is claimed sooner (Django's convention)."""

EnqueueStatus = Literal["created", "deduped", "staged"]
PublishMode = Literal["on-commit", "now", "staged"]
OnConflict = Literal["dedupe", "error"]
NackAction = Literal["retry", "fail", "drop"]
NACK_ACTIONS: tuple[NackAction, ...] = ("retry", "fail", "drop")


_last_uuid7_ms = 0
_last_uuid7_seq = 0
_UUID7_BITS = 0x7 << 76 | 0b10 << 62
"""The version (7) and variant (RFC) bits of every job id."""
_set_uuid_int = vars(uuid.UUID)["int"].__set__
_set_uuid_safe = vars(uuid.UUID)["is_safe"].__set__
"""The slots ``uuid.UUID(int=...)`` sets: a minted id skips its checks and setattr's lookups."""


def new_job_id() -> uuid.UUID:
    """A time-ordered UUID (version 7, RFC 9562), chosen by the enqueuer (see
    :func:`new_job_ids`)."""
    (job_id,) = new_job_ids(1)
    return job_id


def new_job_ids(count: int) -> list[uuid.UUID]:
    """``count`` time-ordered UUIDs (version 7, RFC 9562), chosen by the enqueuer.

    Ids minted in one process are strictly increasing: within one millisecond a 12-bit counter
    takes the place of the random ``rand_a`` bits, so ``x_jobs``' primary key index stays
    append-mostly. The 62 random bits of each come from one read of ``os.urandom`` per call.
    """
    global _last_uuid7_ms, _last_uuid7_seq
    ms = time.time_ns() // 1_000_000
    seq = _last_uuid7_seq
    if ms <= _last_uuid7_ms:
        ms, fresh = _last_uuid7_ms, False
    else:
        seq, fresh = int.from_bytes(os.urandom(2), "big") & 0x3FF, True
    ids = []
    new, unknown = object.__new__, uuid.SafeUUID.unknown
    set_int, set_safe = _set_uuid_int, _set_uuid_safe
    for random in memoryview(os.urandom(8 * count)).cast("Q"):
        if fresh:
            fresh = False
        else:
            seq += 1
            if seq > 0xFFF:
                ms, seq = ms + 1, 0
        job_id = new(uuid.UUID)  # uuid.UUID(int=...), its checks skipped: the value fits
        set_int(job_id, (ms & 0xFFFF_FFFF_FFFF) << 80 | seq << 64 | _UUID7_BITS | random >> 2)
        set_safe(job_id, unknown)
        ids.append(job_id)
    _last_uuid7_ms, _last_uuid7_seq = ms, seq
    return ids


@dataclass(frozen=True, slots=True, kw_only=True)
class EnqueueRequest:
    """One job to write, already validated: ``input_json`` is the exact JSON text to store.

    ``run_at`` (an aware datetime) and ``delay_seconds`` are exclusive; with neither, the job is
    due at the database's ``now()``.
    """

    id: uuid.UUID
    name: str
    queue: str
    input_json: str
    priority: int = PRIORITY_DEFAULT
    run_at: datetime | None = None
    delay_seconds: float | None = None
    idempotency_key: str | None = None
    on_conflict: OnConflict = "dedupe"
    max_attempts: int = 3
    lease_seconds: int | None = None
    tenant_id: str | None = None
    enqueued_by: str | None = None
    traceparent: str | None = None


@quick_init  # built once per job of a batch
@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """What an enqueue answers: the job's id, and whether this call ``created`` it, found a
    live job with the same idempotency key (``deduped``; ``id`` is then the live job's id), or
    ``staged`` it in the outbox, to be published (or deduped) once the transaction commits."""

    id: uuid.UUID
    status: EnqueueStatus

    @property
    def created(self) -> bool:
        return self.status == "created"

    @property
    def deduped(self) -> bool:
        return self.status == "deduped"

    @property
    def staged(self) -> bool:
        return self.status == "staged"


@quick_init  # built once per job
@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimedJob:
    """One attempt handed to a worker. ``claim_token`` fences every later write about it."""

    id: uuid.UUID
    name: str
    queue: str
    input: Any
    attempt: int
    max_attempts: int
    claim_token: uuid.UUID
    priority: int
    tenant_id: str | None
    traceparent: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AckItem:
    """One completed attempt; ``result_json`` is the JSON text of its return value,
    ``progress_json`` its last progress not stored yet (``None``: keep the stored one)."""

    job_id: uuid.UUID
    claim_token: uuid.UUID
    result_json: str = "null"
    progress_json: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat:
    """What one ``job_heartbeat_many`` did. ``renewed``: the lease was extended and the
    progress given was stored. ``busy``: still running under its claim token, but another
    transaction holds the row locked right now (a body's own, an operator's), so it was skipped
    for this beat, nothing written; its lease is NOT lost. Any other id given has lost its
    lease (rescued, cancelled or settled elsewhere)."""

    renewed: frozenset[uuid.UUID] = frozenset()
    busy: frozenset[uuid.UUID] = frozenset()

    @property
    def held(self) -> frozenset[uuid.UUID]:
        """The ids whose lease this worker still holds."""
        return self.renewed | self.busy


CANCELLED_ERROR_CLASS = "ultimat3_jobs.Cancelled"
"""The ``error_class`` of the entry a cancel with a reason (or an author) leaves in ``errors``."""


def cancel_entry(reason: str | None, cancelled_by: str | None) -> dict[str, Any] | None:
    """The ``errors`` entry ``job_cancel`` appends, less the row's own ``attempt``,
    ``worker_id`` and the store's ``at``; ``None`` when there is neither reason nor author."""
    if reason is None and cancelled_by is None:
        return None
    return {
        "error_class": CANCELLED_ERROR_CLASS,
        "message": reason or "",
        "traceback": "",
        "cancelled_by": cancelled_by,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptError:
    """One failed attempt, as kept in ``x_jobs.errors``."""

    attempt: int
    error_class: str
    message: str
    traceback: str = ""
    worker_id: str | None = None
    at: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "error_class": self.error_class,
            "message": self.message,
            "traceback": self.traceback,
            "worker_id": self.worker_id,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class JobHead:
    """What every read of a job answers first, whole or as a list's line: which job, where it
    waits, in what state, and when it is due."""

    id: uuid.UUID
    name: str
    queue: str
    state: JobState
    priority: int
    run_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRecord(JobHead):
    """A job as an operator or a result reader sees it (every column but the lease internals)."""

    input: Any
    idempotency_key: str | None
    tenant_id: str | None
    enqueued_by: str | None
    attempt: int
    max_attempts: int
    worker_id: str | None
    lease_expires_at: datetime | None
    progress: Any
    result: Any
    errors: list[dict[str, Any]] = field(default_factory=list)
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureDecision:
    """What follows a failed attempt, decided in Python (``worker.policy``) and applied by a
    settle or a rescue as given: ``retry`` after ``delay_seconds``, ``fail`` (dead letter) or
    ``drop``. An attempt that does not count gives its attempt number back."""

    action: NackAction
    delay_seconds: float = 0.0
    counts_as_attempt: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpiredAttempt:
    """A running attempt whose lease ended, as the rescuer sees it before deciding.
    ``started`` is False only when the worker recorded that its body had not started."""

    id: uuid.UUID
    claim_token: uuid.UUID
    name: str
    attempt: int
    max_attempts: int
    started: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RescuedJob:
    """A running attempt whose lease expired, and what the rescue did with it: ``retry``
    (``queued`` again), ``fail`` (``failed``, the dead letter) or ``drop`` (deleted).
    ``attempt`` is the row's count after the rescue; ``tenant_id`` the row's tenant (``None``
    where the driver does not answer it)."""

    id: uuid.UUID
    name: str
    action: NackAction
    attempt: int
    tenant_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSummary(JobHead):
    """A job as one line of a list: no input, result, progress or tracebacks, only how many
    attempts failed and the last failure's class and message."""

    idempotency_key: str | None
    tenant_id: str | None
    attempt: int
    max_attempts: int
    worker_id: str | None
    error_count: int
    last_error_class: str | None
    last_error_message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class JobPage:
    """One page of :meth:`~ultimat3_jobs.drivers.base.JobDriver.job_list`, newest first.
    ``next_cursor`` is the id of the page's last job, to pass as ``after`` for the next page;
    ``None`` on the last page."""

    jobs: tuple[JobSummary, ...]
    next_cursor: uuid.UUID | None


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueStats:
    """How many jobs one queue holds in one state.

    ``oldest_ready_seconds`` (``queued`` only): how long the oldest due job has been due, by
    the store's clock; ``None`` when no queued job is due. ``ready`` (``queued`` only): how
    many queued jobs are due now, 0 when the queue is paused: the demand an autoscaler reads,
    whether or not a worker runs. ``exact`` is False when ``jobs`` is a lower bound: finished
    states are counted up to a limit per job name."""

    queue: str
    state: JobState
    jobs: int
    oldest_ready_seconds: float | None = None
    exact: bool = True
    ready: int = 0


QUEUE_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}"
"""A queue name: 1-63 characters, letters, digits and ``_ . : -``, not starting with a sign.
It travels as a NOTIFY payload and an identifier in logs and metrics labels."""

JOB_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_.:-]{0,199}"
"""A job name: 1-200 characters, a dotted Python-style path (``app.jobs.send_welcome``)."""

# -- durable steps (x_job_steps) -------------------------------------------------------------

StepKind = Literal["run", "once", "sleep", "event"]
STEP_KINDS: tuple[StepKind, ...] = ("run", "once", "sleep", "event")
"""What a stored step was: ``run``, ``once``, ``sleep`` (or ``sleep_until``), ``event`` (a
``wait_for_event``)."""

StepStatus = Literal["started", "done", "waiting", "compensated"]
STEP_STATUSES: tuple[StepStatus, ...] = ("started", "done", "waiting", "compensated")


SettleAction = Literal["complete", "retry", "fail", "drop"]
SETTLE_ACTIONS: tuple[SettleAction, ...] = ("complete", "retry", "fail", "drop")


@quick_init  # built once per job
@dataclass(frozen=True, slots=True, kw_only=True)
class SettleItem:
    """How one attempt ended, for ``job_settle_many``: ``complete`` (as an :class:`AckItem`)
    or a nack's ``retry`` (due ``delay_seconds`` from now), ``fail`` or ``drop``, with its
    ``error`` entry (not for a drop) and whether it ``counts_as_attempt``. ``progress_json`` is
    the attempt's last progress not stored yet (``None``: keep the stored one)."""

    job_id: uuid.UUID
    claim_token: uuid.UUID
    action: SettleAction
    result_json: str = "null"
    progress_json: str | None = None
    error: AttemptError | None = None
    delay_seconds: float = 0.0
    counts_as_attempt: bool = True
    relayed: bool = False
    """Rode a slot lent by its worker's run whose row no settle passed on: stamped started now."""
    lent_by: uuid.UUID | None = None
    """The job a relayed run's slot row names: the ending lands only while that row is there."""
