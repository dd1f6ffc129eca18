"""The Redis driver's step store and event bus (``steps.sql``), one script each
(``lua/step_*.lua``, ``lua/job_suspend.lua``, ``lua/event_send.lua``,
``lua/events_purge_expired.lua``), mixed into
:class:`~ultimat3_jobs.drivers.redis.driver.RedisDriver`.

A job's steps live in one hash beside the job (``B:steps:<id>``), deleted with it, as
PostgreSQL's foreign key cascades. Every write about a running attempt's steps compares the
claim token inside its script, and every time is Redis's ``TIME``. A wait on an event is listed
by its event and key, so ``event_send`` ends the waits it matches, makes their jobs due and
wakes their queues in one script, without a scan.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from ultimat3_jobs.drivers.base import owned
from ultimat3_jobs.drivers.jsonb import check_jsonb_text, check_step_texts
from ultimat3_jobs.drivers.redis import codec
from ultimat3_jobs.drivers.redis.connection import RedisStore
from ultimat3_jobs.drivers.redis.scripts import speaks_seam_errors
from ultimat3_jobs.drivers.steps_seam import (
    EVENT_PURGE_DEFAULT,
    EventSent,
    StepRecord,
    check_step_put_status,
    wait_key,
)
from ultimat3_jobs.types import StepKind, StepStatus


@speaks_seam_errors
class StepScriptMethods(RedisStore):
    """``step_*``, ``job_suspend``, ``event_send`` and ``events_purge_expired``."""

    def step_get_many(self, *, job_id: uuid.UUID) -> list[StepRecord]:
        steps = [codec.step_record(text) for text in self._run("step_get_many", [str(job_id)])]
        return sorted((s for s in steps if s is not None), key=lambda s: (s.seq, s.name))

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
        check_step_texts(output_json, error_json)
        args = [str(job_id), str(claim_token), name, str(int(seq)), kind, status, output_json]
        landed = bool(self._run("step_put", [*args, codec.optional(error_json)]))
        return owned(landed, f"step {name!r} ({status})", job_id, claim_token)

    def step_start_once(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, name: str, seq: int
    ) -> bool:
        args = [str(job_id), str(claim_token), name, str(int(seq))]
        landed = bool(self._run("step_start_once", args))
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
        args = [
            str(job_id),
            str(claim_token),
            name,
            str(int(seq)),
            kind,
            codec.optional(event),
            codec.optional(wait_key(event, key)),
            codec.optional(None if seconds is None else repr(float(seconds))),
            codec.optional(None if until is None else codec.micros(until)),
        ]
        found = codec.step_record(self._run("step_wait", args))
        return owned(found, f"step {name!r} (waiting)", job_id, claim_token)

    def step_wait_resolve(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, name: str
    ) -> StepRecord | None:
        args = [str(job_id), str(claim_token), name]
        return codec.step_record(self._run("step_wait_resolve", args))

    def job_suspend(self, *, job_id: uuid.UUID, claim_token: uuid.UUID, step: str) -> bool:
        landed = bool(self._run("job_suspend", [str(job_id), str(claim_token), step]))
        return owned(landed, "suspend", job_id, claim_token)

    def event_send(
        self,
        *,
        name: str,
        key: str | None = None,
        payload_json: str = "null",
        tenant_id: str | None = None,
        ttl_seconds: float,
    ) -> EventSent:
        check_jsonb_text(payload_json, "payload")
        args = [name, key or "", payload_json, codec.optional(tenant_id)]
        ended = self._run("event_send", [*args, repr(float(ttl_seconds))])
        return EventSent(ended=int(ended))

    def events_purge_expired(
        self, *, limit: int = EVENT_PURGE_DEFAULT, before: datetime | None = None
    ) -> int:
        if limit <= 0:
            return 0
        cutoff = codec.optional(None if before is None else codec.micros(before))
        return int(self._run("events_purge_expired", [str(int(limit)), cutoff]))

    def _shift_steps(
        self, what: str, seconds: float, job_id: uuid.UUID | None = None, name: str = ""
    ) -> int:
        """Move every event's ``created_at`` (``what="events"``) or ``expires_at``
        (``"expiry"``), or one step's wait (``"wait"``), by ``seconds``, as the PostgreSQL
        tests do with an UPDATE (test support)."""
        args = [what, str(round(seconds * 1_000_000))]
        if job_id is not None:
            args += [str(job_id), name]
        return int(self._run("step_shift", args))
