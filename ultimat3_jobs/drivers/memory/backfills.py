"""The memory driver's backfill ledger (``drivers/postgres/sql/backfills.sql``)."""

from __future__ import annotations

import uuid
from dataclasses import replace

from ultimat3_jobs.drivers.backfill_seam import (
    BACKFILL_LIST_MAX,
    BackfillRun,
    BackfillStatus,
)
from ultimat3_jobs.drivers.jsonb import check_jsonb_text as _check_json
from ultimat3_jobs.drivers.memory.state import MemoryState
from ultimat3_jobs.errors import StoreRefused
from ultimat3_jobs.serialization import decode_json


class BackfillStatements(MemoryState):
    """Runs by job id, in the order they started."""

    @property
    def _backfills(self) -> dict[uuid.UUID, BackfillRun]:
        found: dict[uuid.UUID, BackfillRun] = self.__dict__.setdefault("_backfill_rows", {})
        return found

    def backfill_start(
        self, *, name: str, scope: str, run_id: uuid.UUID, environment: str
    ) -> BackfillRun | None:
        with self._lock:
            blocked = any(
                run.name == name
                and run.scope == scope
                and run.status == "completed"
                and run.run_id != run_id
                for run in self._backfills.values()
            )
            if not blocked and run_id not in self._backfills:
                now = self.now()
                self._backfills[run_id] = BackfillRun(
                    name=name,
                    scope=scope,
                    run_id=run_id,
                    environment=environment,
                    status="running",
                    started_at=now,
                    updated_at=now,
                )
            return self._backfills.get(run_id)

    def backfill_advance(
        self, *, run_id: uuid.UUID, batch: int, cursor_json: str, rows: int
    ) -> bool:
        _check_json(cursor_json, "cursor")
        with self._lock:
            run = self._backfills.get(run_id)
            if run is None or run.status != "running" or run.batches_done >= batch:
                return False
            self._backfills[run_id] = replace(
                run,
                cursor=decode_json(cursor_json),
                rows_done=run.rows_done + rows,
                batches_done=batch,
                updated_at=self.now(),
            )
            return True

    def backfill_finish(
        self, *, run_id: uuid.UUID, status: BackfillStatus, error: str = ""
    ) -> bool:
        with self._lock:
            run = self._backfills.get(run_id)
            if run is None or run.status != "running":
                return False
            if status == "completed" and any(
                other.name == run.name and other.scope == run.scope and other.status == "completed"
                for other in self._backfills.values()
            ):
                raise StoreRefused(
                    reason=f"x_backfills_completed: {run.name}:{run.scope} has a completed run"
                )
            now = self.now()
            self._backfills[run_id] = replace(
                run, status=status, error=error, finished_at=now, updated_at=now
            )
            return True

    def backfill_list(self, *, limit: int = BACKFILL_LIST_MAX) -> list[BackfillRun]:
        with self._lock:
            runs = list(self._backfills.values())
        runs.reverse()
        runs.sort(key=lambda run: run.started_at or run.updated_at, reverse=True)
        return runs[: max(0, min(int(limit), BACKFILL_LIST_MAX))]
