"""The memory driver's job statements (``drivers/postgres/sql/jobs.sql``): enqueue, claim,
settle (ack, nack), heartbeat, progress, the rescue of expired leases and the claim demand."""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import ultimat3_jobs.types as types
from ultimat3_jobs.carry import carry
from ultimat3_jobs.drivers.base import (
    RESCUE_BATCH_DEFAULT,
    check_claim_queues,
    check_nack_action,
    check_settle_action,
    log_lost_beats,
    log_unowned,
    log_unsettled,
)
from ultimat3_jobs.drivers.jsonb import check_jsonb_text as _check_json
from ultimat3_jobs.drivers.jsonb import checked_progress
from ultimat3_jobs.drivers.jsonb import jsonb_entry as _normalized
from ultimat3_jobs.drivers.memory.commit import hold_until_commit
from ultimat3_jobs.drivers.memory.rows import _expired, _json_timestamp, _ReadyEntry, _Row
from ultimat3_jobs.drivers.memory.state import MemoryState

LEASE_EXPIRED_ENTRY = {
    "error_class": "ultimat3_jobs.LeaseExpired",
    "message": "the lease expired before the attempt settled; its worker was lost",
    "traceback": "",
}
RESCUE_COUNTERS = {"retry": "retried", "fail": "dead", "drop": "dropped"}
RESCUE_STATES = {"retry": types.JobState.QUEUED, "fail": types.JobState.FAILED, "drop": None}


class JobStatements(MemoryState):
    """Enqueue, claim, settle, heartbeat and rescue."""

    def job_ack_many(self, *, items: Sequence[types.AckItem]) -> set[uuid.UUID]:
        if not items:
            return set()
        for item in items:
            _check_json(item.result_json, "result")
            _check_json(item.progress_json or "null", "progress")
        landed: set[uuid.UUID] = set()
        with self._lock:
            now = self.now()
            for item in items:
                row = self._owned(item.job_id, item.claim_token)
                if row is None:
                    continue
                self._complete(row, item.result_json, item.progress_json, now)
                landed.add(row.id)
        for item in items:
            if item.job_id not in landed:
                log_unowned("ack", item.job_id, item.claim_token)
        return landed

    def _complete(
        self, row: _Row, result_json: str, progress_json: str | None, now: datetime
    ) -> None:
        self._move(row, types.JobState.COMPLETED)
        row.result_json = result_json
        row.progress_json = progress_json or row.progress_json
        row.finished_at = now
        row.lease_expires_at = None
        self._count(row.name, now, "completed")

    def job_settle_many(self, *, items: Sequence[types.SettleItem]) -> set[uuid.UUID]:
        entries: list[dict[str, Any] | None] = []
        for item in items:
            check_settle_action(item.action)
            if item.action == "complete":
                _check_json(item.result_json, "result")
            if item.action != "drop":
                _check_json(item.progress_json or "null", "progress")
            nacked = item.error is not None and item.action in ("retry", "fail")
            entries.append(_normalized(item.error.as_json()) if nacked and item.error else None)
        landed: set[uuid.UUID] = set()
        with self._lock:
            now = self.now()
            for item, entry in zip(items, entries, strict=True):
                row = self._owned(item.job_id, item.claim_token)
                if row is None:
                    continue
                if item.action == "complete":
                    self._complete(row, item.result_json, item.progress_json, now)
                else:
                    if item.action != "drop":
                        row.progress_json = item.progress_json or row.progress_json
                    action: types.NackAction = item.action
                    self._settle_nack(
                        row, action, item.delay_seconds, entry, item.counts_as_attempt
                    )
                landed.add(row.id)
        log_unsettled(items, landed)
        return landed

    def job_claim(
        self, *, queues: Sequence[str], limit: int, worker_id: str, lease_seconds: float
    ) -> list[types.ClaimedJob]:
        names = check_claim_queues(queues)
        if limit <= 0:
            return []
        claimed: list[types.ClaimedJob] = []
        with self._lock:
            now = self.now()
            paused_queues = self._paused("queue")
            paused_names = self._paused("job")
            # One head per (queue, job name) heap; merging the heads gives the claim order
            # across queues without touching rows of paused names beyond their heap's top.
            heads: list[tuple[_ReadyEntry, str, str]] = []
            for queue in names:
                if queue in paused_queues:
                    continue
                self._promote(queue, now)
                for job_name in list(self._ready_names.get(queue, ())):
                    if job_name in paused_names:
                        continue
                    top = self._top(queue, job_name)
                    if top is not None:
                        heads.append((top, queue, job_name))
            heapq.heapify(heads)
            while heads and len(claimed) < limit:
                entry, queue, job_name = heapq.heappop(heads)
                heapq.heappop(self._ready[(queue, job_name)])
                row = self._rows[entry[4]]
                self._move(row, types.JobState.RUNNING, popped=True)
                row.attempt += 1
                row.claim_token = uuid.uuid4()
                row.worker_id = worker_id
                row.started_at, row.body_pending = now, False
                seconds = row.lease_seconds if row.lease_seconds is not None else lease_seconds
                row.lease_expires_at = now + timedelta(seconds=float(seconds))
                claimed.append(self._claimed(row))
                top = self._top(queue, job_name)
                if top is not None:
                    heapq.heappush(heads, (top, queue, job_name))
        return claimed

    def job_enqueue(self, *, request: types.EnqueueRequest) -> types.EnqueueResult:
        self._check_request(request)
        if (held := hold_until_commit(self, [request])) is not None:
            return held[0]
        with self._lock:
            result = self._enqueue(request, self.now())
        self._wake([request], [result])
        return result

    def job_enqueue_many(
        self, *, requests: Sequence[types.EnqueueRequest]
    ) -> list[types.EnqueueResult]:
        for request in requests:
            self._check_request(request)
        if (held := hold_until_commit(self, requests)) is not None:
            return held
        with self._lock:
            now = self.now()
            results = [self._enqueue(request, now) for request in requests]
        self._wake(requests, results)
        return results

    def job_heartbeat_many(
        self,
        *,
        attempts: Sequence[tuple[uuid.UUID, uuid.UUID]],
        lease_seconds: float,
        progress: Mapping[uuid.UUID, str] | None = None,
    ) -> types.Heartbeat:
        # No row locks here: no attempt is ever busy, every held one is renewed.
        given = checked_progress(progress)
        landed: set[uuid.UUID] = set()
        with self._lock:
            now = self.now()
            for job_id, token in attempts:
                row = self._owned(job_id, token)
                if row is None:
                    continue
                seconds = row.lease_seconds if row.lease_seconds is not None else lease_seconds
                row.lease_expires_at = now + timedelta(seconds=float(seconds))
                self._renew_slots(row)  # limits: its concurrency slots follow its lease
                row.progress_json = given.get(job_id, row.progress_json)
                landed.add(row.id)
        beat = types.Heartbeat(renewed=frozenset(landed))
        log_lost_beats(attempts, beat)
        return beat

    def job_mark_pending_many(
        self, *, attempts: Sequence[tuple[uuid.UUID, uuid.UUID]], pending: bool
    ) -> set[uuid.UUID]:
        with self._lock:
            owned = [self._owned(job_id, token) for job_id, token in attempts]
            for row in filter(None, owned):
                row.body_pending = pending
            return {row.id for row in owned if row is not None}

    def job_nack(
        self,
        *,
        job_id: uuid.UUID,
        claim_token: uuid.UUID,
        action: types.NackAction,
        delay_seconds: float = 0.0,
        error: types.AttemptError | None = None,
        counts_as_attempt: bool = True,
        progress_json: str | None = None,
    ) -> bool:
        check_nack_action(action)
        entry = _normalized(error.as_json()) if error is not None and action != "drop" else None
        _check_json(progress_json or "null", "progress")
        with self._lock:
            row = self._owned(job_id, claim_token)
            if row is not None:
                row.progress_json = progress_json or row.progress_json
                self._settle_nack(row, action, delay_seconds, entry, counts_as_attempt)
        if row is None:
            log_unowned(f"nack ({action})", job_id, claim_token)
            return False
        return True

    def _settle_nack(
        self,
        row: _Row,
        action: types.NackAction,
        delay_seconds: float,
        entry: dict[str, Any] | None,
        counts_as_attempt: bool,
    ) -> None:
        now = self.now()
        if action == "drop":
            self._move(row, None)
            self._count(row.name, now, "dropped")
            return
        if not counts_as_attempt:
            row.attempt = max(row.attempt - 1, 0)
        if entry is not None:
            row.errors.append({**entry, "at": _json_timestamp(now)})
        row.lease_expires_at = None
        if action == "retry":
            row.run_at = now + timedelta(seconds=max(0.0, float(delay_seconds)))
            row.claim_token = None
            row.worker_id = None
            self._move(row, types.JobState.QUEUED)
            if counts_as_attempt:
                self._count(row.name, now, "retried")
        else:
            row.finished_at = now
            self._move(row, types.JobState.FAILED)
            self._count(row.name, now, "dead" if counts_as_attempt else "refused")

    def job_progress(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, progress_json: str
    ) -> bool:
        _check_json(progress_json, "progress")
        with self._lock:
            row = self._owned(job_id, claim_token)
            if row is not None:
                row.progress_json = progress_json
        if row is None:
            log_unowned("progress", job_id, claim_token)
            return False
        return True

    def job_rescue_expired(
        self,
        *,
        decide: Callable[[types.ExpiredAttempt], types.FailureDecision],
        limit: int = RESCUE_BATCH_DEFAULT,
    ) -> list[types.RescuedJob]:
        with self._lock:
            now = self.now()
            rows = [self._rows[job_id] for job_id in self._running]
            rows = [r for r in rows if r.lease_expires_at is not None and r.lease_expires_at < now]
            rows.sort(key=lambda row: (row.lease_expires_at, row.seq))
            seen = [_expired(row) for row in rows[: max(limit, 0)]]
        # Decided outside the lock, as the SQL driver decides between its two statements.
        decided = [(attempt, decide(attempt)) for attempt in seen]
        rescued: list[types.RescuedJob] = []
        with self._lock:
            now = self.now()
            for attempt, decision in decided:
                row = self._owned(attempt.id, attempt.claim_token)
                if row is None or row.lease_expires_at is None or row.lease_expires_at >= now:
                    continue
                self._rescue_row(row, decision, now)
                rescued.append(carry(types.RescuedJob, row, action=decision.action))
        return rescued

    def _rescue_row(self, row: _Row, decision: types.FailureDecision, now: datetime) -> None:
        if decision.counts_as_attempt:
            entry = {"attempt": row.attempt, **LEASE_EXPIRED_ENTRY, "worker_id": row.worker_id}
            row.errors.append(_normalized({**entry, "at": _json_timestamp(now)}))
            self._count(row.name, now, RESCUE_COUNTERS[decision.action])
        else:
            row.attempt = max(row.attempt - 1, 0)
        # worker_id stays: the statement clears only the lease and the claim token.
        row.lease_expires_at, row.claim_token, row.body_pending = None, None, False
        if decision.action == "retry":
            row.run_at = now + timedelta(seconds=max(0.0, float(decision.delay_seconds)))
        row.finished_at = now if decision.action == "fail" else None
        self._move(row, RESCUE_STATES[decision.action])

    def queue_demand(self, *, queues: Sequence[str]) -> dict[str, int]:
        names = check_claim_queues(queues)
        with self._lock:
            return self._demand(names, self.now())
