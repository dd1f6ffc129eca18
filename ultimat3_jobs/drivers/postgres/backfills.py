"""The backfill ledger of the PostgreSQL driver (``sql/backfills.sql``), mixed into
:class:`~ultimat3_jobs.drivers.postgres.driver.PostgresDriver`."""

from __future__ import annotations

import json
import uuid

from ultimat3_jobs.drivers.backfill_seam import (
    BACKFILL_LIST_MAX,
    BackfillRun,
    BackfillStatus,
)
from ultimat3_jobs.drivers.base import owned
from ultimat3_jobs.drivers.postgres.direct import run_direct
from ultimat3_jobs.drivers.postgres.rows.result import Result, as_uuid, fetch, records
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.models import RawStatementManager
from ultimat3_jobs.serialization import decode_json
from ultimat3_jobs.types import StepKind, StepStatus


def _runs(result: Result) -> list[BackfillRun]:
    """The ledger's rows, whose columns are named as :class:`BackfillRun`'s fields."""
    return records(result, BackfillRun, run_id=as_uuid, cursor=decode_json)


@speaks_seam_errors
class BackfillStatements:
    """Mixed into the driver; reads its ``x_jobs`` statement manager (the ledger lives on the
    same alias)."""

    _jobs: RawStatementManager

    def backfill_start(
        self, *, name: str, scope: str, run_id: uuid.UUID, environment: str
    ) -> BackfillRun | None:
        params = {"name": name, "scope": scope, "run_id": run_id, "environment": environment}
        self._jobs.run("backfill_start", params)
        found = _runs(fetch(self._jobs, "backfill_get", {"run_id": run_id}))
        return next(iter(found), None)

    def backfill_advance(
        self, *, run_id: uuid.UUID, batch: int, cursor_json: str, rows: int
    ) -> bool:
        params = {"run_id": run_id, "batch": batch, "cursor": cursor_json, "rows": rows}
        return bool(self._jobs.run("backfill_advance", params))

    def backfill_step_put(
        self,
        *,
        job_id: uuid.UUID,
        claim_token: uuid.UUID,
        name: str,
        seq: int,
        kind: StepKind,
        status: StepStatus,
        output_json: str = "null",
        error_json: str | None = None,
        batch: int,
    ) -> bool:
        if status != "done":
            raise ValueError(f"backfill_step_put records a batch's step done; got {status!r}")
        output = json.loads(output_json)
        params = {
            "id": job_id,
            "claim_token": claim_token,
            "name": name,
            "seq": seq,
            "kind": kind,
            "output": output_json,
            "error": error_json,
            "run_id": job_id,
            "batch": batch,
            "cursor": json.dumps(output["cursor"]),
            "rows": output["rows"],
        }
        # A batch that swept nothing has no count to write: its record alone.
        statement = "backfill_step_put" if output["rows"] else "step_put_done"
        landed = bool(run_direct(self._jobs, statement, params))
        return owned(landed, f"step {name!r} ({status})", job_id, claim_token)

    def backfill_finish(
        self, *, run_id: uuid.UUID, status: BackfillStatus, error: str = ""
    ) -> bool:
        params = {"run_id": run_id, "status": status, "error": error}
        return bool(self._jobs.run("backfill_finish", params))

    def backfill_list(self, *, limit: int = BACKFILL_LIST_MAX) -> list[BackfillRun]:
        bounded = max(0, min(int(limit), BACKFILL_LIST_MAX))
        return _runs(fetch(self._jobs, "backfill_list", {"limit": bounded}))
