"""The memory driver's shared state: the structures behind its one lock, the store's clock,
the row moves every statement shares, and the wake fan-out.

State lives in plain structures behind one lock; every method takes it once, reads the store's
clock (:meth:`MemoryState.now`) once, and so acts like one statement at one ``now()``.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from ultimat3_jobs.carry import carry
from ultimat3_jobs.drivers.base import QUEUE_DEMAND_ROWS, LeaseHolder
from ultimat3_jobs.drivers.jsonb import check_jsonb_text as _check_json
from ultimat3_jobs.drivers.memory.heaps import ClaimHeaps
from ultimat3_jobs.drivers.memory.rows import CounterKey, _as_utc, _DelayedEntry, _ReadyEntry, _Row
from ultimat3_jobs.drivers.memory.wake import MemoryWake
from ultimat3_jobs.errors import JobNotFound
from ultimat3_jobs.serialization import decode_json
from ultimat3_jobs.types import (
    COUNTER_OUTCOMES,
    LIVE_STATES,
    PRIORITY_MAX,
    PRIORITY_MIN,
    ClaimedJob,
    CronState,
    EnqueueRequest,
    EnqueueResult,
    JobState,
    Pause,
    WorkerRecord,
)


class MemoryState(ClaimHeaps):
    """The state and shared steps of the memory driver; each table family's mixin builds on it."""

    database: str | None
    """None: the memory driver writes through no Django connection."""

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
        self._crons: dict[str, CronState] = {}
        self._leaders: dict[str, tuple[str, int, datetime]] = {}
        self._wakes: list[MemoryWake] = []
        # x_job_leases: (key, slot) -> row; a job's concurrency slots by job id (leases.py).
        self._leases: dict[tuple[str, int], LeaseHolder] = {}
        self._lease_jobs: dict[uuid.UUID, set[tuple[str, int]]] = {}

    # -- the store's clock and test support ---------------------------------------------------

    def now(self) -> datetime:
        """The store's clock: every due time, lease and rescue compares against it."""
        return datetime.now(UTC)

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
        row = carry(
            _Row, request, state=JobState.QUEUED, run_at=run_at, created_at=now, seq=self._seq
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
            self._free_slots(row.id)  # limits: a run's slots go with its settle or rescue
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

    def _free_slots(self, job_id: uuid.UUID) -> int:
        """Delete the concurrency slots ``job_id`` holds; answers how many went. A slot another
        job took over once this one's row expired is that job's now, and stays."""
        held = self._lease_jobs.pop(job_id, set())
        gone = 0
        for place in held:
            lease = self._leases.get(place)
            if lease is not None and lease.job_id == job_id:
                del self._leases[place]
                gone += 1
        return gone

    def _renew_slots(self, row: _Row) -> None:
        """The heartbeat moved ``row``'s lease: its concurrency slots expire with it."""
        if row.lease_expires_at is None:
            return
        for place in self._lease_jobs.get(row.id, ()):
            lease = self._leases.get(place)
            if lease is not None and lease.claim_token == row.claim_token:
                self._leases[place] = replace(lease, expires_at=row.lease_expires_at)

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
        return carry(ClaimedJob, row, input=decode_json(row.input_json))

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

    # -- wake fan-out ---------------------------------------------------------------------

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
