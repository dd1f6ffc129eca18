"""The Redis driver's backfill ledger (``lua/backfill_*.lua``), mixed into
:class:`~ultimat3_jobs.drivers.redis.driver.RedisDriver`: the rules of
``drivers/backfill_seam.py``, one script per method.

One hash per run (``B:backfill:<run id>``), the runs in start order (``B:backfills``) and, per
name and scope, the one completed run (``B:backfill_done``), which blocks a new run and refuses
a second completion as PostgreSQL's unique index does.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ultimat3_jobs.drivers.backfill_seam import BACKFILL_LIST_MAX, BackfillRun, BackfillStatus
from ultimat3_jobs.drivers.jsonb import check_jsonb_text
from ultimat3_jobs.drivers.redis import codec
from ultimat3_jobs.drivers.redis.connection import RedisStore
from ultimat3_jobs.drivers.redis.scripts import speaks_seam_errors
from ultimat3_jobs.serialization import decode_json


def backfill_run(row: Mapping[str, str]) -> BackfillRun:
    """A run's hash, decoded."""
    cursor = row.get("cursor")
    return BackfillRun(
        name=row["name"],
        scope=row["scope"],
        run_id=uuid.UUID(row["run_id"]),
        environment=row["environment"],
        status=row["status"],  # type: ignore[arg-type]
        cursor=None if cursor is None else decode_json(cursor),
        rows_done=int(row["rows_done"]),
        batches_done=int(row["batches_done"]),
        error=row.get("error", ""),
        started_at=codec.moment(row.get("started_at")),
        updated_at=codec.moment(row.get("updated_at")),
        finished_at=codec.moment(row.get("finished_at")),
    )


@speaks_seam_errors
class BackfillScriptMethods(RedisStore):
    """``backfill_start``, ``backfill_advance``, ``backfill_finish``, ``backfill_list``."""

    def backfill_start(
        self, *, name: str, scope: str, run_id: uuid.UUID, environment: str
    ) -> BackfillRun | None:
        row = codec.pairs(self._run("backfill_start", [name, scope, str(run_id), environment]))
        return backfill_run(row) if row else None

    def backfill_advance(
        self, *, run_id: uuid.UUID, batch: int, cursor_json: str, rows: int
    ) -> bool:
        check_jsonb_text(cursor_json, "cursor")
        args = [str(run_id), str(int(batch)), cursor_json, str(int(rows))]
        return bool(self._run("backfill_advance", args))

    def backfill_finish(
        self, *, run_id: uuid.UUID, status: BackfillStatus, error: str = ""
    ) -> bool:
        return bool(self._run("backfill_finish", [str(run_id), status, error]))

    def backfill_list(self, *, limit: int = BACKFILL_LIST_MAX) -> list[BackfillRun]:
        bounded = max(0, min(int(limit), BACKFILL_LIST_MAX))
        answer: Sequence[Any] = self._run("backfill_list", [str(bounded)])
        return [backfill_run(codec.pairs(row)) for row in answer]
