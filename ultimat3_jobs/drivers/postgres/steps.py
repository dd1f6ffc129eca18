"""The step store and the event bus of the PostgreSQL driver (``sql/steps.sql``), mixed into
:class:`~ultimat3_jobs.drivers.postgres.driver.PostgresDriver`.

Each method runs one statement on the calling thread's connection to the alias, like every other
method of the driver. The runtime calls the step writes from a thread of its own whose
connection is in autocommit, never from a body's thread inside its ``atomic()`` block
(``runtime/steps/writer.py``). The two writes of an executed step (``step_put``,
``step_start_once``) skip Django's cursor wrapper when it would add nothing (``direct.py``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from ultimat3_jobs.drivers.base import owned
from ultimat3_jobs.drivers.postgres.direct import run_direct
from ultimat3_jobs.drivers.postgres.rows import steps as step_rows
from ultimat3_jobs.drivers.postgres.rows.result import fetch
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.drivers.steps_seam import (
    EVENT_PURGE_DEFAULT,
    EventSent,
    StepRecord,
    check_step_put_status,
    wait_key,
)
from ultimat3_jobs.models import RawStatementManager
from ultimat3_jobs.types import StepKind, StepStatus


def _fenced_step(job_id: uuid.UUID, claim_token: uuid.UUID, name: str, seq: int) -> dict[str, Any]:
    """The parameters every step write starts from: which step of which job, fenced by the
    claim that writes it."""
    return {"id": job_id, "claim_token": claim_token, "name": name, "seq": seq}


@speaks_seam_errors
class StepStatements:
    """Mixed into the driver; reads its ``x_jobs`` statement manager."""

    _jobs: RawStatementManager

    def step_get_many(self, *, job_id: uuid.UUID) -> list[StepRecord]:
        return step_rows.step_records(fetch(self._jobs, "step_get_many", {"id": job_id}))

    def step_put(
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
    ) -> bool:
        check_step_put_status(status)
        params = _fenced_step(job_id, claim_token, name, seq)
        params.update(kind=kind, status=status, output=output_json, error=error_json)
        statement = "step_put_done" if status == "done" else "step_put"
        landed = bool(run_direct(self._jobs, statement, params))
        return owned(landed, f"step {name!r} ({status})", job_id, claim_token)

    def step_start_once(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, name: str, seq: int
    ) -> bool:
        params = _fenced_step(job_id, claim_token, name, seq)
        landed = bool(run_direct(self._jobs, "step_start_once", params))
        return owned(landed, f"step {name!r} (started)", job_id, claim_token)

    def step_wait(
        self,
        *,
        job_id: uuid.UUID,
        claim_token: uuid.UUID,
        name: str,
        seq: int,
        kind: StepKind,
        event: str | None = None,
        key: str | None = None,
        seconds: float | None = None,
        until: datetime | None = None,
    ) -> StepRecord | None:
        params = _fenced_step(job_id, claim_token, name, seq)
        params.update(
            kind=kind,
            event=event,
            key=wait_key(event, key),
            seconds=None if seconds is None else float(seconds),
            until=until,
        )
        found = step_rows.step_record(fetch(self._jobs, "step_wait", params))
        return owned(found, f"step {name!r} (waiting)", job_id, claim_token)

    def step_wait_resolve(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, name: str
    ) -> StepRecord | None:
        params = {"id": job_id, "claim_token": claim_token, "name": name}
        return step_rows.step_record(fetch(self._jobs, "step_wait_resolve", params))

    def job_suspend(self, *, job_id: uuid.UUID, claim_token: uuid.UUID, step: str) -> bool:
        params = {"id": job_id, "claim_token": claim_token, "step": step}
        return owned(bool(self._jobs.run("job_suspend", params)), "suspend", job_id, claim_token)

    def event_send(
        self,
        *,
        name: str,
        key: str | None = None,
        payload_json: str = "null",
        tenant_id: str | None = None,
        ttl_seconds: float,
    ) -> EventSent:
        params = {
            "name": name,
            "key": key or "",
            "payload": payload_json,
            "tenant_id": tenant_id,
            "ttl_seconds": float(ttl_seconds),
        }
        (ended,) = fetch(self._jobs, "event_send", params).first("ended") or (0,)
        return EventSent(ended=int(ended))

    def events_purge_expired(
        self, *, limit: int = EVENT_PURGE_DEFAULT, before: datetime | None = None
    ) -> int:
        if limit <= 0:
            return 0
        params = {"limit": int(limit), "before": before}
        return len(self._jobs.run("events_purge_expired", params))
