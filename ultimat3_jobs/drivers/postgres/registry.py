"""The worker registry and the wake of the PostgreSQL driver
(:class:`~ultimat3_jobs.drivers.postgres.driver.PostgresDriver`)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence

from ultimat3_jobs.drivers.base import QUEUE_DEMAND_ROWS, WakeSubscription, check_heartbeat_queues
from ultimat3_jobs.drivers.postgres.listen import QueueListener
from ultimat3_jobs.drivers.postgres.params import WAKE_CHANNEL
from ultimat3_jobs.drivers.postgres.rows import operator as operator_rows
from ultimat3_jobs.drivers.postgres.rows.operator import encode_limits
from ultimat3_jobs.drivers.postgres.rows.result import fetch
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.models import RawStatementManager
from ultimat3_jobs.types import ClaimedJob, WorkerRecord


@speaks_seam_errors
class WorkerMethods:
    """Mixed into the driver; reads its statement managers and its listeners."""

    _workers: RawStatementManager
    _listeners: weakref.WeakSet[QueueListener]
    _listeners_lock: threading.Lock

    def wake_subscribe(
        self,
        *,
        on_wake: Callable[[str], None],
        worker_id: str | None = None,
        on_hand: Callable[[ClaimedJob], None] | None = None,
    ) -> WakeSubscription | None:
        """A :class:`~ultimat3_jobs.drivers.postgres.listen.QueueListener` on its own connection
        to this alias' database; live once its first probe comes back. Every listener hears
        every wake (``worker_id`` and ``on_hand`` are not used)."""
        listener = QueueListener(database=self._workers.db, channel=WAKE_CHANNEL, on_wake=on_wake)
        with self._listeners_lock:
            self._listeners.add(listener)
        listener.start()
        return listener

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
        limits: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        names = check_heartbeat_queues(queues)
        self._workers.run(
            "worker_heartbeat",
            {
                "id": worker_id,
                "host": host,
                "pid": pid,
                "queues": names,
                "slots": slots,
                "ttl_seconds": float(ttl_seconds),
                "draining": bool(draining),
                "limit": QUEUE_DEMAND_ROWS,
                "limits": encode_limits(limits),
            },
        )

    def worker_list(self) -> list[WorkerRecord]:
        return operator_rows.workers(fetch(self._workers, "worker_list"))

    def worker_remove(self, *, worker_id: str) -> bool:
        return bool(self._workers.run("worker_remove", {"id": worker_id}))
