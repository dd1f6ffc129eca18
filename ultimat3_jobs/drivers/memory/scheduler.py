"""The memory driver's scheduler statements (``drivers/postgres/sql/scheduler.sql``): the
leader lease and the crons' watermarks."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from ultimat3_jobs.drivers.memory.state import MemoryState
from ultimat3_jobs.types import CronState, EnqueueRequest, EnqueueResult, FireResult, Leadership


class SchedulerStatements(MemoryState):
    """Elect a leader, fire a cron once per occurrence."""

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
        cron: str,
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
            state = self._crons.get(cron)
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
            self._crons[cron] = CronState(
                name=cron,
                watermark=occurrence,
                last_fire_at=occurrence if dispatch else state.last_fire_at,
                last_job_id=job_id if job_id is not None else state.last_job_id,
            )
        if job_id is not None:
            self._wake([request], [EnqueueResult(job_id, "created")])
        return FireResult(moved=True, job_id=job_id)

    def scheduler_cron_sync(self, *, names: Sequence[str]) -> dict[str, CronState]:
        with self._lock:
            now = self.now()
            for name in names:
                self._crons.setdefault(
                    name, CronState(name=name, watermark=now, last_fire_at=None, last_job_id=None)
                )
            return {name: self._crons[name] for name in names}

    def scheduler_cron_read(self, *, names: Sequence[str]) -> dict[str, CronState]:
        with self._lock:
            return {name: self._crons[name] for name in names if name in self._crons}
