"""``MemoryDriver``: the job store in this process's memory, for tests and local development.

A concrete driver: imports L1, L2 only; never the runtime. It keeps the same rules as the
PostgreSQL driver, statement for statement (``drivers/postgres/sql/*.sql``), and passes the same
parity suite. Nothing survives the process, and nothing is shared with another process. An
enqueue inside ``transaction.atomic()`` waits for the commit (``memory_commit.py``).

State lives in plain structures behind one lock; every method takes it once, reads the store's
clock (:meth:`MemoryDriver.now`) once, and so acts like one statement at one ``now()``.
"""

from __future__ import annotations

import heapq
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn, Protocol

from ultimat3_jobs.drivers.base import (
    QUEUE_DEMAND_ROWS,
    QUEUE_STATS_ROWS,
    RESCUE_BATCH_DEFAULT,
    JobDriver,
    WakeSubscription,
    check_claim_queues,
    check_counter_period,
    check_job_list,
    check_pause,
    cursor_gone,
    log_lost_beats,
    log_unowned,
)
from ultimat3_jobs.drivers.memory_commit import hold_until_commit
from ultimat3_jobs.errors import JobDuplicate, JobNotFound, JobNotRequeueable, StoreRefused
from ultimat3_jobs.serialization import check_json, decode_json
from ultimat3_jobs.types import (
    COUNTER_OUTCOMES,
    FINISHED_STATES,
    LIVE_STATES,
    PRIORITY_MAX,
    PRIORITY_MIN,
    AckItem,
    AttemptError,
    BulkResult,
    ClaimedJob,
    CounterPeriod,
    CounterRow,
    CounterTotal,
    EnqueueRequest,
    EnqueueResult,
    ExpiredAttempt,
    FailureDecision,
    FireResult,
    Heartbeat,
    JobPage,
    JobRecord,
    JobState,
    JobSummary,
    Leadership,
    NackAction,
    Pause,
    PauseScope,
    QueueStats,
    RescuedJob,
    TaskState,
    WorkerRecord,
    cancel_entry,
)

wake_logger = logging.getLogger("ultimat3_jobs.wake")

LEASE_EXPIRED_ENTRY = {
    "error_class": "ultimat3_jobs.LeaseExpired",
    "message": "the lease expired before the attempt settled; its worker was lost",
    "traceback": "",
}
RESCUE_COUNTERS = {"retry": "retried", "fail": "dead", "drop": "dropped"}
RESCUE_STATES = {"retry": JobState.QUEUED, "fail": JobState.FAILED, "drop": None}


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
    attempt: int
    max_attempts: int
    lease_seconds: int | None
    claim_token: uuid.UUID | None
    worker_id: str | None
    lease_expires_at: datetime | None
    progress_json: str | None
    result_json: str | None
    errors: list[dict[str, Any]] = field(default_factory=list)
    traceparent: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    seq: int
    # A heap entry is valid only while the row is queued and the entry carries this version.
    version: int = 0
    # Whether the valid entry sits in a ready heap (due) rather than the delayed heap.
    ready: bool = False
    body_pending: bool = False


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


def _json_text(value: Any) -> str | None:
    """A jsonb value as ``->>`` reads it: text as is, anything else as its JSON text."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "))


def _refuse_constant(token: str) -> NoReturn:
    raise ValueError(f"{token} is not valid JSON")


_JSONB_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _check_json(text: str, column: str) -> None:
    # jsonb refuses what it cannot parse; refuse it here too rather than fail at read time.
    try:
        _JSONB_DECODER.decode(text)
    except (TypeError, ValueError) as exc:
        raise StoreRefused(reason=f"{column}: not valid JSON text for jsonb: {exc}") from exc


def _expired(row: _Row) -> ExpiredAttempt:
    assert row.claim_token is not None  # a running row holds its claim token
    return ExpiredAttempt(
        id=row.id,
        claim_token=row.claim_token,
        name=row.name,
        attempt=row.attempt,
        max_attempts=row.max_attempts,
        started=not row.body_pending,
    )


def _normalized(entry: dict[str, Any]) -> dict[str, Any]:
    # Through JSON and back, so an error entry reads back as jsonb would give it; what jsonb
    # refuses (NUL, a lone surrogate) is refused here too.
    try:
        check_json(entry, root="error", max_depth=4)
    except ValueError as exc:  # JobInputInvalid, naming the field and the rule
        raise StoreRefused(reason=getattr(exc, "message", str(exc))) from exc
    normal: dict[str, Any] = json.loads(json.dumps(entry, allow_nan=False))
    return normal


class _Subscribers(Protocol):
    def _unsubscribe(self, wake: MemoryWake) -> None: ...


class MemoryWake:
    """A :class:`~ultimat3_jobs.drivers.base.WakeSubscription` of the memory driver (and of the
    memory outbox): the writing thread calls ``on_wake(queue)`` right after the write, outside
    the store's lock. Live until closed."""

    def __init__(self, driver: _Subscribers, on_wake: Callable[[str], None]) -> None:
        self._driver = driver
        self._on_wake = on_wake
        # Held while on_wake runs, so close() returns only once no call is in flight; reentrant
        # so that on_wake may itself close the subscription.
        self._lock = threading.RLock()
        self._closed = False

    def is_live(self) -> bool:
        """True until :meth:`close`."""
        return not self._closed

    def close(self) -> None:
        """Stop the wakes; no ``on_wake`` call follows."""
        with self._lock:
            self._closed = True
        self._driver._unsubscribe(self)

    def deliver(self, queue: str) -> None:
        """Call ``on_wake(queue)`` unless closed; an exception in it is logged, not raised."""
        with self._lock:
            if self._closed:
                return
            try:
                self._on_wake(queue)
            except Exception:
                wake_logger.exception(
                    "jobs.wake.callback_failed: on_wake(%r) raised",
                    queue,
                    extra={"event": "jobs.wake.callback_failed", "queue": queue},
                )


class MemoryDriver(JobDriver):
    """Jobs in a dict of this process, guarded by one lock."""

    name = "memory"
    enqueue_joins_transaction = False

    def __init__(self, *, database: str | None = None) -> None:
        self.database = None
        self._lock = threading.Lock()
        self._rows: dict[uuid.UUID, _Row] = {}
        self._live_keys: dict[tuple[str, str], uuid.UUID] = {}
        self._running: dict[uuid.UUID, None] = {}
        self._delayed: dict[str, list[_DelayedEntry]] = {}
        self._ready: dict[tuple[str, str], list[_ReadyEntry]] = {}
        self._ready_names: dict[str, set[str]] = {}
        self._ready_count: dict[str, int] = {}
        self._promoted_at: dict[str, datetime] = {}
        self._stale = 0
        self._seq = 0
        self._pauses: dict[tuple[str, str], tuple[int, Pause]] = {}
        self._pause_seq = 0
        self._counters: dict[CounterKey, dict[str, int]] = {}
        self._workers: dict[str, WorkerRecord] = {}
        self._tasks: dict[str, TaskState] = {}
        self._leaders: dict[str, tuple[str, int, datetime]] = {}
        self._wakes: list[MemoryWake] = []

    # -- the store's clock and test support ---------------------------------------------------

    def now(self) -> datetime:
        """The store's clock: every due time, lease and rescue compares against it."""
        return datetime.now(UTC)

    def reset(self) -> None:
        """Forget every job, pause, counter and worker (test support)."""
        with self._lock:
            self._rows.clear()
            self._live_keys.clear()
            self._running.clear()
            self._delayed.clear()
            self._ready.clear()
            self._ready_names.clear()
            self._ready_count.clear()
            self._promoted_at.clear()
            self._stale = 0
            self._seq = 0
            self._pauses.clear()
            self._pause_seq = 0
            self._counters.clear()
            self._workers.clear()
            self._tasks.clear()
            self._leaders.clear()

    def counter_snapshot(self) -> dict[CounterKey, dict[str, int]]:
        """The settle counters as ``{(name, period, bucket): {column: count}}``, one entry per
        row ``x_job_counters`` would hold (test support)."""
        with self._lock:
            return {key: dict(counts) for key, counts in self._counters.items()}

    def _set_run_at(self, job_id: uuid.UUID, when: datetime) -> None:
        """Move a job's ``run_at``, as the PostgreSQL tests do with an UPDATE (test support)."""
        with self._lock:
            row = self._get_row(job_id)
            if row.state is JobState.QUEUED:
                self._drop_entry(row, popped=False)
                row.run_at = _as_utc(when)
                self._push(row)
                self._maybe_compact()
            else:
                row.run_at = _as_utc(when)

    def _set_lease_expires_at(self, job_id: uuid.UUID, when: datetime) -> None:
        """Move a job's ``lease_expires_at``, as the PostgreSQL tests do with an UPDATE (test
        support)."""
        with self._lock:
            self._get_row(job_id).lease_expires_at = _as_utc(when)

    def _set_worker_expires_at(self, worker_id: str, when: datetime) -> None:
        """Move a worker's ``expires_at``, as the PostgreSQL tests do with an UPDATE (test
        support)."""
        with self._lock:
            worker = self._workers[worker_id]
            self._workers[worker_id] = replace(worker, expires_at=_as_utc(when))

    def _shift_worker_times(self, worker_id: str, by: timedelta) -> None:
        """Move a worker's ``started_at``, ``heartbeat_at`` and ``expires_at`` by ``by``, as the
        PostgreSQL tests do with an UPDATE (test support)."""
        with self._lock:
            worker = self._workers[worker_id]
            self._workers[worker_id] = replace(
                worker,
                started_at=worker.started_at + by,
                heartbeat_at=worker.heartbeat_at + by,
                expires_at=worker.expires_at + by,
            )

    # -- jobs -------------------------------------------------------------------------------

    def job_ack_many(self, *, items: Sequence[AckItem]) -> set[uuid.UUID]:
        if not items:
            return set()
        for item in items:
            _check_json(item.result_json, "result")
            _check_json(item.progress_json or "null", "progress")
        landed: set[uuid.UUID] = set()
        with self._lock:
            now = self.now()
            for item in items:
                row = self._owned(item.job_id, item.claim_token)
                if row is None:
                    continue
                self._move(row, JobState.COMPLETED)
                row.result_json = item.result_json
                row.progress_json = item.progress_json or row.progress_json
                row.finished_at = now
                row.lease_expires_at = None
                self._count(row.name, now, "completed")
                landed.add(row.id)
        for item in items:
            if item.job_id not in landed:
                log_unowned("ack", item.job_id, item.claim_token)
        return landed

    def job_cancel(
        self, *, job_id: uuid.UUID, reason: str | None = None, cancelled_by: str | None = None
    ) -> bool:
        entry = cancel_entry(reason, cancelled_by)
        with self._lock:
            row = self._rows.get(job_id)
            if row is None or row.state not in LIVE_STATES:
                return False
            now = self.now()
            if entry is not None:
                extra = {"attempt": row.attempt, "worker_id": row.worker_id}
                row.errors.append(_normalized({**entry, **extra, "at": _json_timestamp(now)}))
            self._move(row, JobState.CANCELLED)
            row.finished_at = now
            row.lease_expires_at = None
            self._count(row.name, now, "cancelled")
            self._maybe_compact()
            return True

    def job_claim(
        self, *, queues: Sequence[str], limit: int, worker_id: str, lease_seconds: float
    ) -> list[ClaimedJob]:
        names = check_claim_queues(queues)
        if limit <= 0:
            return []
        claimed: list[ClaimedJob] = []
        with self._lock:
            now = self.now()
            paused_queues = self._paused("queue")
            paused_names = self._paused("job")
            # One head per (queue, job name) heap; merging the heads gives the claim order
            # across queues without touching rows of paused names beyond their heap's top.
            heads: list[tuple[_ReadyEntry, str, str]] = []
            for queue in names:
                if queue in paused_queues:
                    continue
                self._promote(queue, now)
                for job_name in list(self._ready_names.get(queue, ())):
                    if job_name in paused_names:
                        continue
                    top = self._top(queue, job_name)
                    if top is not None:
                        heads.append((top, queue, job_name))
            heapq.heapify(heads)
            while heads and len(claimed) < limit:
                entry, queue, job_name = heapq.heappop(heads)
                heapq.heappop(self._ready[(queue, job_name)])
                row = self._rows[entry[4]]
                self._move(row, JobState.RUNNING, popped=True)
                row.attempt += 1
                row.claim_token = uuid.uuid4()
                row.worker_id = worker_id
                row.started_at, row.body_pending = now, False
                seconds = row.lease_seconds if row.lease_seconds is not None else lease_seconds
                row.lease_expires_at = now + timedelta(seconds=float(seconds))
                claimed.append(self._claimed(row))
                top = self._top(queue, job_name)
                if top is not None:
                    heapq.heappush(heads, (top, queue, job_name))
        return claimed

    def job_enqueue(self, *, request: EnqueueRequest) -> EnqueueResult:
        self._check_request(request)
        if (held := hold_until_commit(self, [request])) is not None:
            return held[0]
        with self._lock:
            result = self._enqueue(request, self.now())
        self._wake([request], [result])
        return result

    def job_enqueue_many(self, *, requests: Sequence[EnqueueRequest]) -> list[EnqueueResult]:
        for request in requests:
            self._check_request(request)
        if (held := hold_until_commit(self, requests)) is not None:
            return held
        with self._lock:
            now = self.now()
            results = [self._enqueue(request, now) for request in requests]
        self._wake(requests, results)
        return results

    def job_get(self, *, job_id: uuid.UUID) -> JobRecord | None:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                return None
            return JobRecord(
                id=row.id,
                name=row.name,
                queue=row.queue,
                state=row.state,
                priority=row.priority,
                run_at=row.run_at,
                input=decode_json(row.input_json),
                idempotency_key=row.idempotency_key,
                tenant_id=row.tenant_id,
                enqueued_by=row.enqueued_by,
                attempt=row.attempt,
                max_attempts=row.max_attempts,
                worker_id=row.worker_id,
                lease_expires_at=row.lease_expires_at,
                progress=decode_json(row.progress_json),
                result=decode_json(row.result_json),
                errors=decode_json(json.dumps(row.errors)),
                created_at=row.created_at,
                started_at=row.started_at,
                finished_at=row.finished_at,
            )

    def job_heartbeat_many(
        self,
        *,
        attempts: Sequence[tuple[uuid.UUID, uuid.UUID]],
        lease_seconds: float,
        progress: Mapping[uuid.UUID, str] | None = None,
    ) -> Heartbeat:
        # No row locks here: no attempt is ever busy, every held one is renewed.
        given = progress or {}
        for text in given.values():
            _check_json(text, "progress")
        landed: set[uuid.UUID] = set()
        with self._lock:
            now = self.now()
            for job_id, token in attempts:
                row = self._owned(job_id, token)
                if row is None:
                    continue
                seconds = row.lease_seconds if row.lease_seconds is not None else lease_seconds
                row.lease_expires_at = now + timedelta(seconds=float(seconds))
                row.progress_json = given.get(job_id, row.progress_json)
                landed.add(row.id)
        beat = Heartbeat(renewed=frozenset(landed))
        log_lost_beats(attempts, beat)
        return beat

    def job_list(
        self,
        *,
        states: Sequence[str] | None = None,
        queues: Sequence[str] | None = None,
        names: Sequence[str] | None = None,
        tenant: str | None = None,
        search: str | None = None,
        after: uuid.UUID | None = None,
        limit: int = 50,
    ) -> JobPage:
        query = check_job_list(
            states=states,
            queues=queues,
            names=names,
            tenant=tenant,
            search=search,
            after=after,
            limit=limit,
        )
        with self._lock:
            anchor: tuple[datetime, uuid.UUID] | None = None
            if query.after is not None:
                cursor = self._rows.get(query.after)
                if cursor is None:
                    raise cursor_gone(query.after)
                anchor = (cursor.created_at, cursor.id)
            matched = [
                row
                for row in self._rows.values()
                if (query.states is None or row.state.value in query.states)
                and (query.queues is None or row.queue in query.queues)
                and (query.names is None or row.name in query.names)
                and (query.tenant is None or row.tenant_id == query.tenant)
                and (
                    query.search is None
                    or row.idempotency_key == query.search
                    or row.id == query.search_id
                )
                and (anchor is None or (row.created_at, row.id) < anchor)
            ]
            matched.sort(key=lambda row: (row.created_at, row.id), reverse=True)
            jobs = tuple(self._summary(row) for row in matched[: query.limit])
        more = len(matched) > query.limit
        return JobPage(jobs=jobs, next_cursor=jobs[-1].id if more else None)

    @staticmethod
    def _summary(row: _Row) -> JobSummary:
        last = row.errors[-1] if row.errors else {}
        return JobSummary(
            id=row.id,
            name=row.name,
            queue=row.queue,
            state=row.state,
            priority=row.priority,
            run_at=row.run_at,
            idempotency_key=row.idempotency_key,
            tenant_id=row.tenant_id,
            attempt=row.attempt,
            max_attempts=row.max_attempts,
            worker_id=row.worker_id,
            error_count=len(row.errors),
            last_error_class=_json_text(last.get("error_class")),
            last_error_message=_json_text(last.get("message")),
            created_at=row.created_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
        )

    def job_mark_pending_many(
        self, *, attempts: Sequence[tuple[uuid.UUID, uuid.UUID]], pending: bool
    ) -> set[uuid.UUID]:
        with self._lock:
            owned = [self._owned(job_id, token) for job_id, token in attempts]
            for row in filter(None, owned):
                row.body_pending = pending
            return {row.id for row in owned if row is not None}

    def job_nack(
        self,
        *,
        job_id: uuid.UUID,
        claim_token: uuid.UUID,
        action: NackAction,
        delay_seconds: float = 0.0,
        error: AttemptError | None = None,
        counts_as_attempt: bool = True,
        progress_json: str | None = None,
    ) -> bool:
        if action not in ("retry", "fail", "drop"):
            raise ValueError(f"a nack action is 'retry', 'fail' or 'drop'; got {action!r}")
        entry = _normalized(error.as_json()) if error is not None and action != "drop" else None
        _check_json(progress_json or "null", "progress")
        with self._lock:
            row = self._owned(job_id, claim_token)
            if row is not None:
                row.progress_json = progress_json or row.progress_json
                self._settle_nack(row, action, delay_seconds, entry, counts_as_attempt)
        if row is None:
            log_unowned(f"nack ({action})", job_id, claim_token)
            return False
        return True

    def _settle_nack(
        self,
        row: _Row,
        action: NackAction,
        delay_seconds: float,
        entry: dict[str, Any] | None,
        counts_as_attempt: bool,
    ) -> None:
        now = self.now()
        if action == "drop":
            self._move(row, None)
            self._count(row.name, now, "dropped")
            return
        if not counts_as_attempt:
            row.attempt = max(row.attempt - 1, 0)
        if entry is not None:
            row.errors.append({**entry, "at": _json_timestamp(now)})
        row.lease_expires_at = None
        if action == "retry":
            row.run_at = now + timedelta(seconds=max(0.0, float(delay_seconds)))
            row.claim_token = None
            row.worker_id = None
            self._move(row, JobState.QUEUED)
            if counts_as_attempt:
                self._count(row.name, now, "retried")
        else:
            row.finished_at = now
            self._move(row, JobState.FAILED)
            self._count(row.name, now, "dead" if counts_as_attempt else "refused")

    def job_progress(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, progress_json: str
    ) -> bool:
        _check_json(progress_json, "progress")
        with self._lock:
            row = self._owned(job_id, claim_token)
            if row is not None:
                row.progress_json = progress_json
        if row is None:
            log_unowned("progress", job_id, claim_token)
            return False
        return True

    def job_promote(self, *, job_id: uuid.UUID) -> bool:
        with self._lock:
            row = self._rows.get(job_id)
            now = self.now()
            if row is None or row.state is not JobState.QUEUED or row.run_at <= now:
                return False
            self._drop_entry(row, popped=False)
            row.run_at = now
            self._push(row)
            self._maybe_compact()
            queue = row.queue
        self._deliver([queue])
        return True

    def job_remove(self, *, job_id: uuid.UUID) -> bool:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None or row.state is JobState.RUNNING:
                return False
            self._move(row, None)
            self._maybe_compact()
            return True

    def job_requeue(self, *, job_id: uuid.UUID) -> None:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                raise JobNotFound(f"no job has id {job_id}")
            holder = self._key_holder(row)
            if row.state not in LIVE_STATES and holder is None:
                self._requeue_row(row, self.now())
                return
            state = row.state.value
        if holder is not None:
            raise JobDuplicate(
                f"job {job_id} cannot be requeued: live job {holder} holds its idempotency key",
                existing_id=holder,
            )
        raise JobNotRequeueable(
            f"job {job_id} is {state}; only a completed, failed or cancelled job can be requeued"
        )

    def job_requeue_failed(self, *, name: str, limit: int) -> BulkResult:
        with self._lock:
            now = self.now()
            failed = [
                row
                for row in self._rows.values()
                if row.name == name and row.state is JobState.FAILED
            ]
            newest: dict[str, _Row] = {}
            for row in failed:
                key = row.idempotency_key
                if key is not None and (
                    key not in newest
                    or (row.created_at, row.id) > (newest[key].created_at, newest[key].id)
                ):
                    newest[key] = row
            candidates = [
                row
                for row in failed
                if row.idempotency_key is None
                or (
                    newest[row.idempotency_key] is row
                    and (name, row.idempotency_key) not in self._live_keys
                )
            ]
            candidates.sort(key=lambda row: (row.created_at, row.id))
            moved = candidates[: max(limit, 0)]
            for row in moved:
                self._requeue_row(row, now)
            queues = list(dict.fromkeys(row.queue for row in moved))
        self._deliver(queues)
        return BulkResult(moved=len(moved), remaining=len(failed) - len(moved))

    def _requeue_row(self, row: _Row, now: datetime) -> None:
        row.run_at = now
        row.attempt = 0
        row.claim_token = None
        row.worker_id = None
        row.lease_expires_at = None
        row.started_at = None
        row.finished_at = None
        row.result_json = None
        row.progress_json = None
        self._move(row, JobState.QUEUED)

    def job_rescue_expired(
        self,
        *,
        decide: Callable[[ExpiredAttempt], FailureDecision],
        limit: int = RESCUE_BATCH_DEFAULT,
    ) -> list[RescuedJob]:
        with self._lock:
            now = self.now()
            rows = [self._rows[job_id] for job_id in self._running]
            rows = [r for r in rows if r.lease_expires_at is not None and r.lease_expires_at < now]
            rows.sort(key=lambda row: (row.lease_expires_at, row.seq))
            seen = [_expired(row) for row in rows[: max(limit, 0)]]
        # Decided outside the lock, as the SQL driver decides between its two statements.
        decided = [(attempt, decide(attempt)) for attempt in seen]
        rescued: list[RescuedJob] = []
        with self._lock:
            now = self.now()
            for attempt, decision in decided:
                row = self._owned(attempt.id, attempt.claim_token)
                if row is None or row.lease_expires_at is None or row.lease_expires_at >= now:
                    continue
                self._rescue_row(row, decision, now)
                rescued.append(
                    RescuedJob(
                        id=row.id, name=row.name, action=decision.action, attempt=row.attempt
                    )
                )
        return rescued

    def _rescue_row(self, row: _Row, decision: FailureDecision, now: datetime) -> None:
        if decision.counts_as_attempt:
            entry = {"attempt": row.attempt, **LEASE_EXPIRED_ENTRY, "worker_id": row.worker_id}
            row.errors.append(_normalized({**entry, "at": _json_timestamp(now)}))
            self._count(row.name, now, RESCUE_COUNTERS[decision.action])
        else:
            row.attempt = max(row.attempt - 1, 0)
        # worker_id stays: the statement clears only the lease and the claim token.
        row.lease_expires_at, row.claim_token, row.body_pending = None, None, False
        if decision.action == "retry":
            row.run_at = now + timedelta(seconds=max(0.0, float(decision.delay_seconds)))
        row.finished_at = now if decision.action == "fail" else None
        self._move(row, RESCUE_STATES[decision.action])

    # -- queues and pauses ----------------------------------------------------------------

    def pause_add(
        self, *, scope: PauseScope, target: str, paused_by: str = "", reason: str = ""
    ) -> bool:
        check_pause(scope, target)
        with self._lock:
            if (scope, target) in self._pauses:
                return False
            self._pause_seq += 1
            pause = Pause(
                scope=scope,
                target=target,
                paused_by=paused_by,
                reason=reason,
                created_at=self.now(),
            )
            self._pauses[(scope, target)] = (self._pause_seq, pause)
            return True

    def pause_list(self) -> list[Pause]:
        with self._lock:
            ordered = sorted(self._pauses.values(), key=lambda item: (item[1].created_at, item[0]))
        return [pause for _, pause in ordered]

    def pause_remove(self, *, scope: PauseScope, target: str) -> bool:
        check_pause(scope, target)
        with self._lock:
            return self._pauses.pop((scope, target), None) is not None

    def queue_demand(self, *, queues: Sequence[str]) -> dict[str, int]:
        names = check_claim_queues(queues)
        with self._lock:
            return self._demand(names, self.now())

    def _demand(self, names: Iterable[str], now: datetime) -> dict[str, int]:
        demand: dict[str, int] = {}
        paused_queues, paused_names = self._paused("queue"), self._paused("job")
        for queue in names:
            if queue in paused_queues:
                demand[queue] = 0
                continue
            # Rows of paused job names do not count: no claim can take them.
            self._promote(queue, now)
            held = paused_names.intersection(self._ready_names.get(queue, ()))
            held_rows = sum(
                1 for n in held for e in self._ready[(queue, n)] if self._valid(e[4], e[3])
            )
            demand[queue] = min(self._ready_count.get(queue, 0) - held_rows, QUEUE_DEMAND_ROWS)
        return demand

    def queue_stats(self, *, limit: int = QUEUE_STATS_ROWS) -> list[QueueStats]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"queue_stats counts up to a positive limit; got {limit!r}")
        counts: dict[tuple[str, JobState], int] = {}
        oldest: dict[str, datetime] = {}
        due: dict[str, int] = {}
        # Per job name and finished state: the queues of the rows counted, and how many.
        taken: dict[tuple[str, JobState], dict[str, int]] = {}
        with self._lock:
            now = self.now()
            paused_queues = self._paused("queue")
            for row in self._rows.values():
                if row.state in FINISHED_STATES:
                    # As the statement does: at most ``limit`` rows per job name and state.
                    queues = taken.setdefault((row.name, row.state), {})
                    if sum(queues.values()) >= limit:
                        continue
                    queues[row.queue] = queues.get(row.queue, 0) + 1
                elif row.state is JobState.QUEUED and row.run_at <= now:
                    due[row.queue] = due.get(row.queue, 0) + 1
                    if row.queue not in oldest or row.run_at < oldest[row.queue]:
                        oldest[row.queue] = row.run_at
                counts[(row.queue, row.state)] = counts.get((row.queue, row.state), 0) + 1
        capped_queues = {
            (queue, state)
            for (_name, state), queues in taken.items()
            if sum(queues.values()) >= limit
            for queue in queues
        }
        stats = []
        for (queue, state), jobs in counts.items():
            ready = oldest.get(queue) if state is JobState.QUEUED else None
            stats.append(
                QueueStats(
                    queue=queue,
                    state=state,
                    jobs=jobs,
                    oldest_ready_seconds=None
                    if ready is None
                    else max(0.0, (now - ready).total_seconds()),
                    exact=(queue, state) not in capped_queues,
                    ready=0
                    if state is not JobState.QUEUED or queue in paused_queues
                    else due.get(queue, 0),
                )
            )
        stats.sort(key=lambda stat: (stat.queue, stat.state.value))
        return stats

    # -- counters ---------------------------------------------------------------------------

    def counter_read(
        self, *, since: datetime, period: CounterPeriod = "minute"
    ) -> list[CounterRow]:
        check_counter_period(period)
        start = _truncate(_as_utc(since), period)
        with self._lock:
            found = [
                CounterRow(name=name, period=period, bucket=bucket, **counts)
                for (name, row_period, bucket), counts in self._counters.items()
                if row_period == period and bucket >= start
            ]
        found.sort(key=lambda row: (row.bucket, row.name))
        return found

    def counter_rollup(self, *, keep_seconds: float) -> int:
        with self._lock:
            cutoff = self.now() - timedelta(seconds=float(keep_seconds))
            folded = 0
            for key in sorted(k for k in self._counters if k[1] == "minute"):
                name, _, bucket = key
                hour = bucket.replace(minute=0, second=0, microsecond=0)
                if hour + timedelta(hours=1) >= cutoff:
                    continue
                counts = self._counters.pop(key)
                target = self._counters.setdefault(
                    (name, "hour", hour), dict.fromkeys(COUNTER_OUTCOMES, 0)
                )
                for column, value in counts.items():
                    target[column] += value
                folded += 1
            return folded

    def counter_total(self) -> list[CounterTotal]:
        totals: dict[str, dict[str, int]] = {}
        with self._lock:
            for (name, _period, _bucket), counts in self._counters.items():
                total = totals.setdefault(name, dict.fromkeys(COUNTER_OUTCOMES, 0))
                for column in COUNTER_OUTCOMES:
                    total[column] += counts[column]
        return [CounterTotal(name=name, **totals[name]) for name in sorted(totals)]

    # -- the scheduler ----------------------------------------------------------------------

    def leader_attempt_elect(
        self, *, name: str, holder: str, ttl_seconds: float
    ) -> Leadership | None:
        with self._lock:
            now = self.now()
            current = self._leaders.get(name)
            if current is not None and current[0] != holder and current[2] >= now:
                return None
            epoch = 1 if current is None else current[1] + (current[0] != holder)
            expires_at = now + timedelta(seconds=float(ttl_seconds))
            self._leaders[name] = (holder, epoch, expires_at)
            return Leadership(epoch=epoch, expires_at=expires_at, store_now=now)

    def leader_resign(self, *, name: str, holder: str) -> bool:
        with self._lock:
            current = self._leaders.get(name)
            if current is None or current[0] != holder:
                return False
            self._leaders[name] = (holder, current[1], self.now() - timedelta(seconds=1))
            return True

    def scheduler_fire(
        self,
        *,
        task: str,
        old_watermark: datetime,
        occurrence: datetime,
        dispatch: bool,
        request: EnqueueRequest,
        leader: str,
        holder: str,
        epoch: int,
    ) -> FireResult:
        self._check_request(request)
        with self._lock:
            now = self.now()
            lease = self._leaders.get(leader)
            state = self._tasks.get(task)
            leading = lease is not None and lease[0] == holder and lease[1] == epoch
            if not leading or lease is None or lease[2] <= now:
                return FireResult(moved=False, job_id=None)
            if state is None or state.watermark != old_watermark:
                return FireResult(moved=False, job_id=None)
            job_id: uuid.UUID | None = None
            if dispatch:
                due_now = replace(request, run_at=now, delay_seconds=None)
                result = self._enqueue(due_now, now)
                job_id = result.id if result.created else None
            self._tasks[task] = TaskState(
                name=task,
                watermark=occurrence,
                last_fire_at=occurrence if dispatch else state.last_fire_at,
                last_job_id=job_id if job_id is not None else state.last_job_id,
            )
        if job_id is not None:
            self._wake([request], [EnqueueResult(job_id, "created")])
        return FireResult(moved=True, job_id=job_id)

    def scheduler_task_sync(self, *, names: Sequence[str]) -> dict[str, TaskState]:
        with self._lock:
            now = self.now()
            for name in names:
                self._tasks.setdefault(
                    name, TaskState(name=name, watermark=now, last_fire_at=None, last_job_id=None)
                )
            return {name: self._tasks[name] for name in names}

    # -- wake and the worker registry ------------------------------------------------------

    def wake_subscribe(self, *, on_wake: Callable[[str], None]) -> WakeSubscription | None:
        """A :class:`MemoryWake`: called from the enqueuing thread after each enqueue that
        created a job due now."""
        subscription = MemoryWake(self, on_wake)
        with self._lock:
            self._wakes.append(subscription)
        return subscription

    def _unsubscribe(self, subscription: MemoryWake) -> None:
        with self._lock:
            if subscription in self._wakes:
                self._wakes.remove(subscription)

    def _wake(self, requests: Sequence[EnqueueRequest], results: Sequence[EnqueueResult]) -> None:
        # The same rule as the PostgreSQL statements: one wake per queue per write, only for a
        # created job without run_at or delay.
        queues = list(
            dict.fromkeys(
                request.queue
                for request, result in zip(requests, results, strict=True)
                if result.created and request.run_at is None and not request.delay_seconds
            )
        )
        self._deliver(queues)

    def _deliver(self, queues: Sequence[str]) -> None:
        """Call every subscriber once per queue (outside the driver's lock)."""
        if not queues:
            return
        with self._lock:
            subscriptions = list(self._wakes)
        for subscription in subscriptions:
            for queue in queues:
                subscription.deliver(queue)

    def worker_heartbeat(
        self,
        *,
        worker_id: str,
        host: str,
        pid: int,
        queues: Sequence[str],
        slots: int,
        ttl_seconds: float,
        draining: bool = False,
    ) -> None:
        if isinstance(queues, str):
            raise TypeError("queues must be a sequence of queue names, not one string")
        names = list(dict.fromkeys(queues))
        with self._lock:
            now = self.now()
            for other_id, other in list(self._workers.items()):
                if other_id != worker_id and other.expires_at <= now:
                    del self._workers[other_id]
            demand = dict.fromkeys(names, 0) if draining else self._demand(names, now)
            previous = self._workers.get(worker_id)
            self._workers[worker_id] = WorkerRecord(
                id=worker_id,
                host=host,
                pid=pid,
                queues=names,
                slots=slots,
                demand=demand,
                started_at=previous.started_at if previous is not None else now,
                heartbeat_at=now,
                expires_at=now + timedelta(seconds=float(ttl_seconds)),
            )

    def worker_list(self) -> list[WorkerRecord]:
        with self._lock:
            now = self.now()
            live = [worker for worker in self._workers.values() if worker.expires_at > now]
        live.sort(key=lambda worker: worker.id)
        return [
            replace(worker, queues=list(worker.queues), demand=dict(worker.demand))
            for worker in live
        ]

    def worker_remove(self, *, worker_id: str) -> bool:
        with self._lock:
            return self._workers.pop(worker_id, None) is not None

    def close(self) -> None:
        """Close the wake subscriptions still open."""
        with self._lock:
            subscriptions = list(self._wakes)
        for subscription in subscriptions:
            subscription.close()

    # -- rows -------------------------------------------------------------------------------

    def _check_request(self, request: EnqueueRequest) -> None:
        _check_json(request.input_json, "input")
        if not PRIORITY_MIN <= request.priority <= PRIORITY_MAX:
            raise ValueError(
                f"x_jobs_priority_range: priority {request.priority} is outside "
                f"{PRIORITY_MIN}..{PRIORITY_MAX}"
            )
        if request.max_attempts < 1:
            raise ValueError(
                f"x_jobs_attempts_valid: max_attempts {request.max_attempts} is below 1"
            )

    def _live_holder(self, request: EnqueueRequest) -> uuid.UUID | None:
        """The id an enqueue of ``request`` would be answered ``deduped`` with, if any."""
        with self._lock:
            if request.id in self._rows or request.idempotency_key is None:
                return request.id if request.id in self._rows else None
            return self._live_keys.get((request.name, request.idempotency_key))

    def _enqueue(self, request: EnqueueRequest, now: datetime) -> EnqueueResult:
        if request.id in self._rows:
            return EnqueueResult(request.id, "deduped")
        key = request.idempotency_key
        if key is not None:
            holder = self._live_keys.get((request.name, key))
            if holder is not None:
                return EnqueueResult(holder, "deduped")
        if request.run_at is not None:
            run_at = _as_utc(request.run_at)
        else:
            run_at = now + timedelta(seconds=float(request.delay_seconds or 0))
        self._seq += 1
        row = _Row(
            id=request.id,
            name=request.name,
            queue=request.queue,
            state=JobState.QUEUED,
            priority=request.priority,
            run_at=run_at,
            input_json=request.input_json,
            idempotency_key=key,
            tenant_id=request.tenant_id,
            enqueued_by=request.enqueued_by,
            attempt=0,
            max_attempts=request.max_attempts,
            lease_seconds=request.lease_seconds,
            claim_token=None,
            worker_id=None,
            lease_expires_at=None,
            progress_json=None,
            result_json=None,
            traceparent=request.traceparent,
            created_at=now,
            started_at=None,
            finished_at=None,
            seq=self._seq,
        )
        self._rows[row.id] = row
        if key is not None:
            self._live_keys[(row.name, key)] = row.id
        self._push(row)
        return EnqueueResult(row.id, "created")

    def _get_row(self, job_id: uuid.UUID) -> _Row:
        row = self._rows.get(job_id)
        if row is None:
            raise JobNotFound(f"no job has id {job_id}")
        return row

    def _owned(self, job_id: uuid.UUID, claim_token: uuid.UUID) -> _Row | None:
        """The row a fenced write may touch: running under that claim token."""
        row = self._rows.get(job_id)
        if row is None or row.state is not JobState.RUNNING or row.claim_token != claim_token:
            return None
        return row

    def _key_holder(self, row: _Row) -> uuid.UUID | None:
        """The other live job holding the row's (name, idempotency key), if any."""
        if row.idempotency_key is None:
            return None
        holder = self._live_keys.get((row.name, row.idempotency_key))
        return holder if holder != row.id else None

    def _move(self, row: _Row, state: JobState | None, *, popped: bool = False) -> None:
        """Change a row's state (``None`` deletes it), keeping the live-key index, the running
        set and the claim heaps in step. ``popped``: the claim already took its heap entry."""
        old = row.state
        if old is JobState.QUEUED:
            self._drop_entry(row, popped=popped)
        elif old is JobState.RUNNING:
            self._running.pop(row.id, None)
        key = (row.name, row.idempotency_key) if row.idempotency_key is not None else None
        was_live = old in LIVE_STATES
        is_live = state is not None and state in LIVE_STATES
        if key is not None and was_live and not is_live and self._live_keys.get(key) == row.id:
            del self._live_keys[key]
        if state is None:
            del self._rows[row.id]
            return
        row.state = state
        if key is not None and is_live and not was_live:
            self._live_keys[key] = row.id
        if state is JobState.RUNNING:
            self._running[row.id] = None
        elif state is JobState.QUEUED:
            self._push(row)

    def _count(self, job_name: str, now: datetime, column: str) -> None:
        bucket = _as_utc(now).replace(second=0, microsecond=0)
        counts = self._counters.get((job_name, "minute", bucket))
        if counts is None:
            counts = dict.fromkeys(COUNTER_OUTCOMES, 0)
            self._counters[(job_name, "minute", bucket)] = counts
        counts[column] += 1

    def _paused(self, scope: str) -> set[str]:
        return {target for (kind, target) in self._pauses if kind == scope}

    @staticmethod
    def _claimed(row: _Row) -> ClaimedJob:
        assert row.claim_token is not None and row.lease_expires_at is not None
        return ClaimedJob(
            id=row.id,
            name=row.name,
            queue=row.queue,
            input=decode_json(row.input_json),
            attempt=row.attempt,
            max_attempts=row.max_attempts,
            claim_token=row.claim_token,
            priority=row.priority,
            tenant_id=row.tenant_id,
            lease_expires_at=row.lease_expires_at,
            enqueued_at=row.created_at,
            traceparent=row.traceparent,
        )

    # -- claim heaps ------------------------------------------------------------------------
    #
    # Every queued row has exactly one valid entry: in its queue's delayed heap (by run_at) until
    # a claim or demand read finds it due, then in the ready heap of its (queue, job name), in
    # claim order. Entries of rows that left the queue or moved are left behind and skipped when
    # they surface (``_stale`` counts them; ``_maybe_compact`` rebuilds when they pile up).
    # ``_ready_count`` is the number of valid ready entries per queue: the demand.

    def _push(self, row: _Row) -> None:
        row.version += 1
        row.ready = False
        heap = self._delayed.setdefault(row.queue, [])
        heapq.heappush(heap, (row.run_at, row.seq, row.version, row.id))

    def _drop_entry(self, row: _Row, *, popped: bool) -> None:
        if row.ready:
            self._ready_count[row.queue] -= 1
            row.ready = False
        if not popped:
            self._stale += 1
        row.version += 1

    def _valid(self, entry_id: uuid.UUID, version: int) -> _Row | None:
        row = self._rows.get(entry_id)
        if row is None or row.state is not JobState.QUEUED or row.version != version:
            return None
        return row

    def _promote(self, queue: str, now: datetime) -> None:
        """Move the queue's rows due at ``now`` into its ready heaps, so that they hold exactly
        the queued rows with ``run_at <= now``."""
        promoted_at = self._promoted_at.get(queue)
        if promoted_at is not None and now < promoted_at:
            self._demote(queue, now)
        self._promoted_at[queue] = now
        delayed = self._delayed.get(queue)
        while delayed and delayed[0][0] <= now:
            run_at, seq, version, entry_id = heapq.heappop(delayed)
            row = self._valid(entry_id, version)
            if row is None:
                self._stale -= 1
                continue
            heap = self._ready.setdefault((queue, row.name), [])
            heapq.heappush(heap, (-row.priority, run_at, seq, version, entry_id))
            self._ready_names.setdefault(queue, set()).add(row.name)
            self._ready_count[queue] = self._ready_count.get(queue, 0) + 1
            row.ready = True
        if delayed is not None and not delayed:
            del self._delayed[queue]

    def _demote(self, queue: str, now: datetime) -> None:
        # The clock stepped back: rows promoted since are no longer due. Rare, so a full pass
        # over the queue's ready heaps is fine.
        delayed = self._delayed.setdefault(queue, [])
        for job_name in list(self._ready_names.get(queue, ())):
            kept: list[_ReadyEntry] = []
            for entry in self._ready[(queue, job_name)]:
                row = self._valid(entry[4], entry[3])
                if row is None:
                    self._stale -= 1
                elif entry[1] > now:
                    self._ready_count[queue] -= 1
                    row.ready = False
                    heapq.heappush(delayed, (entry[1], entry[2], entry[3], entry[4]))
                else:
                    kept.append(entry)
            heapq.heapify(kept)
            self._ready[(queue, job_name)] = kept
            self._top(queue, job_name)

    def _top(self, queue: str, job_name: str) -> _ReadyEntry | None:
        """The first valid entry of a ready heap, dropping stale ones on the way; an emptied
        heap is forgotten."""
        heap = self._ready.get((queue, job_name))
        while heap:
            entry = heap[0]
            if self._valid(entry[4], entry[3]) is not None:
                return entry
            heapq.heappop(heap)
            self._stale -= 1
        if heap is not None:
            del self._ready[(queue, job_name)]
            self._ready_names[queue].discard(job_name)
            if not self._ready_names[queue]:
                del self._ready_names[queue]
        return None

    def _maybe_compact(self) -> None:
        if self._stale <= max(_COMPACT_MIN_STALE, len(self._rows)):
            return
        self._delayed.clear()
        self._ready.clear()
        self._ready_names.clear()
        self._ready_count.clear()
        self._promoted_at.clear()
        self._stale = 0
        for row in self._rows.values():
            if row.state is JobState.QUEUED:
                self._push(row)
