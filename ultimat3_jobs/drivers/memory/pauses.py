"""The memory driver's pauses (``drivers/postgres/sql/pauses.sql``)."""

from __future__ import annotations

from ultimat3_jobs.drivers.base import check_pause
from ultimat3_jobs.drivers.memory.state import MemoryState
from ultimat3_jobs.types import Pause, PauseScope


class PauseStatements(MemoryState):
    """Pause and resume a queue or a job name."""

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
