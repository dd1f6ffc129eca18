"""``MemoryDriver``: the job store in this process's memory, for tests and local development.

A concrete driver: imports L1, L2 only; never the runtime. It keeps the same rules as the
PostgreSQL driver, statement for statement (``drivers/postgres/sql/*.sql``), and passes the same
parity suite. Nothing survives the process, and nothing is shared with another process. An
enqueue inside ``transaction.atomic()`` waits for the commit (``commit.py``).

The class assembles one mixin per table family (``jobs.py``, ``operator.py``, ``pauses.py``,
``counters.py``, ``scheduler.py``, ``workers.py``) over the shared state, lock and clock of
``state.py``; it adds the wake subscription and the test support.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from ultimat3_jobs.drivers.base import JobDriver, WakeSubscription
from ultimat3_jobs.drivers.memory.backfills import BackfillStatements
from ultimat3_jobs.drivers.memory.counters import CounterStatements
from ultimat3_jobs.drivers.memory.jobs import JobStatements
from ultimat3_jobs.drivers.memory.leases import LeaseStatements
from ultimat3_jobs.drivers.memory.operator import OperatorStatements
from ultimat3_jobs.drivers.memory.pauses import PauseStatements
from ultimat3_jobs.drivers.memory.retention import RetentionStatements
from ultimat3_jobs.drivers.memory.rows import _as_utc
from ultimat3_jobs.drivers.memory.scheduler import SchedulerStatements
from ultimat3_jobs.drivers.memory.steps import StepStatements
from ultimat3_jobs.drivers.memory.wake import MemoryWake
from ultimat3_jobs.drivers.memory.workers import WorkerStatements
from ultimat3_jobs.types import ClaimedJob, JobState


class MemoryDriver(
    JobStatements,
    OperatorStatements,
    PauseStatements,
    CounterStatements,
    SchedulerStatements,
    WorkerStatements,
    StepStatements,
    LeaseStatements,
    RetentionStatements,
    BackfillStatements,
    JobDriver,
):
    """Jobs in a dict of this process, guarded by one lock."""

    name = "memory"
    enqueue_joins_transaction = False

    # -- test support -----------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every job, pause, counter and worker (test support)."""
        with self._lock:
            self._rows.clear()
            self._live_keys.clear()
            self._running.clear()
            self._clear_heaps()
            self._seq = 0
            self._pauses.clear()
            self._pause_seq = 0
            self._counters.clear()
            self._workers.clear()
            self._crons.clear()
            self._leaders.clear()
            self._steps.clear()
            self._events.clear()
            self._leases.clear()
            self._lease_jobs.clear()

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

    # -- wake -------------------------------------------------------------------------------

    def wake_subscribe(
        self,
        *,
        on_wake: Callable[[str], None],
        worker_id: str | None = None,
        on_hand: Callable[[ClaimedJob], None] | None = None,
    ) -> WakeSubscription | None:
        """A :class:`MemoryWake`: called from the enqueuing thread after each enqueue that
        created a job due now (every subscription; ``worker_id`` and ``on_hand`` are not used)."""
        subscription = MemoryWake(self, on_wake)
        with self._lock:
            self._wakes.append(subscription)
        return subscription

    def close(self) -> None:
        """Close the wake subscriptions still open."""
        with self._lock:
            subscriptions = list(self._wakes)
        for subscription in subscriptions:
            subscription.close()
