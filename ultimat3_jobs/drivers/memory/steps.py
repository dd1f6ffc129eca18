"""The memory driver's step store and event bus (``drivers/postgres/sql/steps.sql``): the same
rules, statement for statement, under the driver's one lock."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from ultimat3_jobs.drivers.base import log_unowned, owned
from ultimat3_jobs.drivers.jsonb import check_jsonb_text as _check_json
from ultimat3_jobs.drivers.jsonb import check_step_texts
from ultimat3_jobs.drivers.memory.rows import _as_utc
from ultimat3_jobs.drivers.memory.state import MemoryState
from ultimat3_jobs.drivers.steps_seam import (
    EVENT_PURGE_DEFAULT,
    EventSent,
    StepRecord,
    check_step_put_status,
    wait_key,
)
from ultimat3_jobs.serialization import decode_json
from ultimat3_jobs.types import JobState, StepKind, StepStatus

_FORWARD: dict[str, tuple[str | None, ...]] = {
    "done": (None, "started", "waiting"),
    "compensated": ("done",),
}
"""The statuses (``None``: no row) a step may move from to each status ``step_put`` writes."""


@dataclass(slots=True)
class _Event:
    id: int
    name: str
    key: str
    payload_json: str
    tenant_id: str | None
    created_at: datetime
    expires_at: datetime


class StepStatements(MemoryState):
    """Steps per job id (gone with the job's row), events in the order they were sent."""

    @property
    def _steps(self) -> dict[uuid.UUID, dict[str, StepRecord]]:
        found: dict[uuid.UUID, dict[str, StepRecord]] = self.__dict__.setdefault("_step_rows", {})
        return found

    @property
    def _events(self) -> list[_Event]:
        found: list[_Event] = self.__dict__.setdefault("_event_rows", [])
        return found

    def _job_steps(self, job_id: uuid.UUID) -> dict[str, StepRecord]:
        """The steps of a job that exists (forgetting those of a job that is gone)."""
        if job_id not in self._rows:
            self._steps.pop(job_id, None)
            return {}
        return self._steps.setdefault(job_id, {})

    def step_get_many(self, *, job_id: uuid.UUID) -> list[StepRecord]:
        with self._lock:
            steps = list(self._job_steps(job_id).values())
        return sorted(steps, key=lambda step: (step.seq, step.name))

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
        with self._lock:
            landed = False
            if self._owned(job_id, claim_token) is not None:
                steps = self._job_steps(job_id)
                old = steps.get(name)
                if (old.status if old else None) in _FORWARD[status]:
                    now = self.now()
                    base = old or StepRecord(name=name, seq=seq, kind=kind, status=status)
                    steps[name] = replace(
                        base,
                        status=status,
                        output=base.output if status == "compensated" else decode_json(output_json),
                        error=decode_json(error_json) if error_json is not None else base.error,
                        updated_at=now,
                    )
                    landed = True
        return owned(landed, f"step {name!r} ({status})", job_id, claim_token)

    def step_start_once(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, name: str, seq: int
    ) -> bool:
        record = StepRecord(name=name, seq=seq, kind="once", status="started")
        return self._insert(job_id, claim_token, record) is not None

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
        now = self.now()
        record = StepRecord(
            name=name,
            seq=seq,
            kind=kind,
            status="waiting",
            event=event,
            key=wait_key(event, key),
            wait_since=now,
            wait_until=_as_utc(until)
            if until is not None
            else now + timedelta(seconds=seconds or 0),
        )
        return self._insert(job_id, claim_token, record)

    def _insert(
        self, job_id: uuid.UUID, claim_token: uuid.UUID, record: StepRecord
    ) -> StepRecord | None:
        with self._lock:
            stored = None
            if self._owned(job_id, claim_token) is not None:
                steps = self._job_steps(job_id)
                if record.name not in steps:
                    stored = steps[record.name] = replace(record, updated_at=self.now())
        if stored is None:
            log_unowned(f"step {record.name!r} ({record.status})", job_id, claim_token)
        return stored

    def _match(self, step: StepRecord) -> _Event | None:
        if step.event is None or step.wait_since is None:
            return None
        return next(
            (
                e
                for e in self._events
                if e.name == step.event and e.key == step.key and e.created_at >= step.wait_since
            ),
            None,
        )

    def step_wait_resolve(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, name: str
    ) -> StepRecord | None:
        with self._lock:
            if self._owned(job_id, claim_token) is None:
                return None
            steps = self._job_steps(job_id)
            step = steps.get(name)
            if step is None or step.status != "waiting":
                return step
            now = self.now()
            found = self._match(step)
            if found is None and (step.wait_until is None or step.wait_until > now):
                return step
            output = decode_json(found.payload_json) if found is not None else None
            steps[name] = replace(step, status="done", output=output, updated_at=now)
            return steps[name]

    def job_suspend(self, *, job_id: uuid.UUID, claim_token: uuid.UUID, step: str) -> bool:
        with self._lock:
            row = self._owned(job_id, claim_token)
            record = self._job_steps(job_id).get(step) if row is not None else None
            if row is None or record is None:
                landed = False
            else:
                now = self.now()
                waiting = record.status == "waiting" and self._match(record) is None
                wake = record.wait_until if waiting and record.wait_until is not None else now
                row.run_at = max(wake, now)
                row.attempt = max(row.attempt - 1, 0)
                row.lease_expires_at = None
                row.claim_token = None
                row.worker_id = None
                self._move(row, JobState.QUEUED)
                landed = True
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
        _check_json(payload_json, "payload")
        queues: dict[str, None] = {}
        ended = 0
        with self._lock:
            now = self.now()
            event_id = self.__dict__["_event_seq"] = self.__dict__.get("_event_seq", 0) + 1
            self._events.append(
                _Event(
                    id=event_id,
                    name=name,
                    key=key or "",
                    payload_json=payload_json,
                    tenant_id=tenant_id,
                    created_at=now,
                    expires_at=now + timedelta(seconds=float(ttl_seconds)),
                )
            )
            for job_id in list(self._steps):
                row = self._rows.get(job_id)
                if row is None:
                    continue
                for step_name, step in self._steps[job_id].items():
                    if (
                        step.status != "waiting"
                        or step.event != name
                        or step.key != (key or "")
                        or step.wait_since is None
                        or step.wait_since > now
                    ):
                        continue
                    self._steps[job_id][step_name] = replace(
                        step, status="done", output=decode_json(payload_json), updated_at=now
                    )
                    ended += 1
                    if row.state is JobState.QUEUED and row.run_at > now:
                        self._drop_entry(row, popped=False)
                        row.run_at = now
                        self._push(row)
                        queues[row.queue] = None
                    elif row.state is JobState.QUEUED:
                        queues[row.queue] = None
            self._maybe_compact()
        self._deliver(list(queues))
        return EventSent(ended=ended)

    def events_purge_expired(
        self, *, limit: int = EVENT_PURGE_DEFAULT, before: datetime | None = None
    ) -> int:
        if limit <= 0:
            return 0
        with self._lock:
            now = self.now() if before is None else _as_utc(before)
            expired = sorted(
                (e for e in self._events if e.expires_at <= now), key=lambda e: e.expires_at
            )[:limit]
            doomed = {e.id for e in expired}
            self._events[:] = [e for e in self._events if e.id not in doomed]
        return len(doomed)
