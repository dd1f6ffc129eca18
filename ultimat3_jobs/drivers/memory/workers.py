"""The memory driver's worker registry (``drivers/postgres/sql/workers.sql``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta

from ultimat3_jobs.drivers.base import check_heartbeat_queues
from ultimat3_jobs.drivers.memory.state import MemoryState
from ultimat3_jobs.types import WorkerRecord


class WorkerStatements(MemoryState):
    """Register, list and forget workers."""

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
                limits={what: dict(names) for what, names in (limits or {}).items()},
            )

    def worker_list(self) -> list[WorkerRecord]:
        with self._lock:
            now = self.now()
            live = [worker for worker in self._workers.values() if worker.expires_at > now]
        live.sort(key=lambda worker: worker.id)
        return [
            replace(
                worker,
                queues=list(worker.queues),
                demand=dict(worker.demand),
                limits={what: dict(names) for what, names in worker.limits.items()},
            )
            for worker in live
        ]

    def worker_remove(self, *, worker_id: str) -> bool:
        with self._lock:
            return self._workers.pop(worker_id, None) is not None
