"""The memory driver's retention deletes (``drivers/postgres/sql/retention.sql``): the same
cutoffs, bounds and order as the PostgreSQL statements."""

from __future__ import annotations

import uuid
from datetime import datetime

from ultimat3_jobs.drivers.memory.rows import _as_utc
from ultimat3_jobs.drivers.memory.state import MemoryState
from ultimat3_jobs.drivers.retention_seam import check_finished_state, check_purge_limit
from ultimat3_jobs.types import JobState


class RetentionStatements(MemoryState):
    """Finished jobs (their steps with them), expired events and old counter rows."""

    def clock_now(self) -> datetime:
        return self.now()

    def _finished(
        self, state: JobState | str, before: datetime
    ) -> list[tuple[datetime, uuid.UUID]]:
        wanted, cutoff = check_finished_state(state), _as_utc(before)
        return sorted(
            (row.finished_at, row.id)
            for row in self._rows.values()
            if row.state is wanted and row.finished_at is not None and row.finished_at < cutoff
        )

    def job_purge_finished(self, *, state: JobState | str, before: datetime, limit: int) -> int:
        check_purge_limit(limit)
        with self._lock:
            doomed = self._finished(state, before)[:limit]
            steps = self.__dict__.get("_step_rows", {})
            for _, job_id in doomed:
                self._move(self._rows[job_id], None)
                steps.pop(job_id, None)
            return len(doomed)

    def job_count_finished(self, *, state: JobState | str, before: datetime, limit: int) -> int:
        with self._lock:
            return min(len(self._finished(state, before)), max(0, int(limit)))

    def event_count_expired(self, *, before: datetime, limit: int) -> int:
        cutoff = _as_utc(before)
        with self._lock:
            events = self.__dict__.get("_event_rows", [])
            found = sum(1 for event in events if event.expires_at <= cutoff)
        return min(found, max(0, int(limit)))

    def _old_counters(self, before: datetime) -> list[tuple[datetime, tuple[str, str, datetime]]]:
        cutoff = _as_utc(before)
        return sorted((key[2], key) for key in self._counters if key[2] < cutoff)

    def counter_purge(self, *, before: datetime, limit: int) -> int:
        check_purge_limit(limit)
        with self._lock:
            doomed = self._old_counters(before)[:limit]
            for _, key in doomed:
                del self._counters[key]
            return len(doomed)

    def counter_count(self, *, before: datetime, limit: int) -> int:
        with self._lock:
            return min(len(self._old_counters(before)), max(0, int(limit)))
