"""The memory driver's operator reads and writes (``drivers/postgres/sql/operator.sql``, and
``job_get``, ``job_cancel``, ``job_requeue`` of ``jobs.sql``)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from ultimat3_jobs.carry import carry
from ultimat3_jobs.drivers.base import (
    QUEUE_STATS_ROWS,
    JobListQuery,
    check_queue_stats_limit,
    cursor_gone,
)
from ultimat3_jobs.drivers.jsonb import jsonb_entry as _normalized
from ultimat3_jobs.drivers.jsonb import jsonb_text as _json_text
from ultimat3_jobs.drivers.memory.rows import ATTEMPT_COLUMNS, _json_timestamp, _Row
from ultimat3_jobs.drivers.memory.state import MemoryState
from ultimat3_jobs.errors import JobDuplicate, JobNotFound, JobNotRequeueable
from ultimat3_jobs.serialization import decode_json
from ultimat3_jobs.types import (
    FINISHED_STATES,
    LIVE_STATES,
    BulkResult,
    JobPage,
    JobRecord,
    JobState,
    JobSummary,
    QueueStats,
    cancel_entry,
)


class OperatorStatements(MemoryState):
    """What the admin, the command and the operator API read and change."""

    def job_get(self, *, job_id: uuid.UUID) -> JobRecord | None:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                return None
            return carry(
                JobRecord,
                row,
                input=decode_json(row.input_json),
                progress=decode_json(row.progress_json),
                result=decode_json(row.result_json),
                errors=decode_json(json.dumps(row.errors)),
            )

    def job_cancel(
        self, *, job_id: uuid.UUID, reason: str | None = None, cancelled_by: str | None = None
    ) -> bool:
        entry = cancel_entry(reason, cancelled_by)
        with self._lock:
            row = self._rows.get(job_id)
            if row is None or row.state not in LIVE_STATES:
                return False
            now = self.now()
            if entry is not None:
                extra = {"attempt": row.attempt, "worker_id": row.worker_id}
                row.errors.append(_normalized({**entry, **extra, "at": _json_timestamp(now)}))
            self._move(row, JobState.CANCELLED)
            row.finished_at = now
            row.lease_expires_at = None
            self._count(row.name, now, "cancelled")
            self._maybe_compact()
            return True

    def job_list_page(self, *, query: JobListQuery) -> JobPage:
        with self._lock:
            anchor: tuple[datetime, uuid.UUID] | None = None
            if query.after is not None:
                cursor = self._rows.get(query.after)
                if cursor is None:
                    raise cursor_gone(query.after)
                anchor = (cursor.created_at, cursor.id)
            matched = [
                row
                for row in self._rows.values()
                if (query.states is None or row.state.value in query.states)
                and (query.queues is None or row.queue in query.queues)
                and (query.names is None or row.name in query.names)
                and (query.tenant is None or row.tenant_id == query.tenant)
                and (
                    query.search is None
                    or row.idempotency_key == query.search
                    or row.id == query.search_id
                )
                and (anchor is None or (row.created_at, row.id) < anchor)
            ]
            matched.sort(key=lambda row: (row.created_at, row.id), reverse=True)
            jobs = tuple(self._summary(row) for row in matched[: query.limit])
        more = len(matched) > query.limit
        return JobPage(jobs=jobs, next_cursor=jobs[-1].id if more else None)

    @staticmethod
    def _summary(row: _Row) -> JobSummary:
        last = row.errors[-1] if row.errors else {}
        return carry(
            JobSummary,
            row,
            error_count=len(row.errors),
            last_error_class=_json_text(last.get("error_class")),
            last_error_message=_json_text(last.get("message")),
        )

    def job_promote(self, *, job_id: uuid.UUID) -> bool:
        with self._lock:
            row = self._rows.get(job_id)
            now = self.now()
            if row is None or row.state is not JobState.QUEUED or row.run_at <= now:
                return False
            self._drop_entry(row, popped=False)
            row.run_at = now
            self._push(row)
            self._maybe_compact()
            queue = row.queue
        self._deliver([queue])
        return True

    def job_remove(self, *, job_id: uuid.UUID) -> bool:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None or row.state is JobState.RUNNING:
                return False
            self._move(row, None)
            self._maybe_compact()
            return True

    def job_requeue(self, *, job_id: uuid.UUID) -> None:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                raise JobNotFound(f"no job has id {job_id}")
            holder = self._key_holder(row)
            if row.state not in LIVE_STATES and holder is None:
                self._requeue_row(row, self.now())
                return
            state = row.state.value
        if holder is not None:
            raise JobDuplicate(
                f"job {job_id} cannot be requeued: live job {holder} holds its idempotency key",
                existing_id=holder,
            )
        raise JobNotRequeueable(
            f"job {job_id} is {state}; only a completed, failed or cancelled job can be requeued"
        )

    def job_requeue_failed(self, *, name: str, limit: int) -> BulkResult:
        with self._lock:
            now = self.now()
            failed = [
                row
                for row in self._rows.values()
                if row.name == name and row.state is JobState.FAILED
            ]
            newest: dict[str, _Row] = {}
            for row in failed:
                key = row.idempotency_key
                if key is not None and (
                    key not in newest
                    or (row.created_at, row.id) > (newest[key].created_at, newest[key].id)
                ):
                    newest[key] = row
            candidates = [
                row
                for row in failed
                if row.idempotency_key is None
                or (
                    newest[row.idempotency_key] is row
                    and (name, row.idempotency_key) not in self._live_keys
                )
            ]
            candidates.sort(key=lambda row: (row.created_at, row.id))
            moved = candidates[: max(limit, 0)]
            for row in moved:
                self._requeue_row(row, now)
            queues = list(dict.fromkeys(row.queue for row in moved))
        self._deliver(queues)
        return BulkResult(moved=len(moved), remaining=len(failed) - len(moved))

    def _requeue_row(self, row: _Row, now: datetime) -> None:
        row.run_at = now
        row.attempt = 0
        for column in ATTEMPT_COLUMNS:
            setattr(row, column, None)
        self._move(row, JobState.QUEUED)

    def queue_stats(self, *, limit: int = QUEUE_STATS_ROWS) -> list[QueueStats]:
        check_queue_stats_limit(limit)
        counts: dict[tuple[str, JobState], int] = {}
        oldest: dict[str, datetime] = {}
        due: dict[str, int] = {}
        # Per job name and finished state: the queues of the rows counted, and how many.
        taken: dict[tuple[str, JobState], dict[str, int]] = {}
        with self._lock:
            now = self.now()
            paused_queues = self._paused("queue")
            for row in self._rows.values():
                if row.state in FINISHED_STATES:
                    # As the statement does: at most ``limit`` rows per job name and state.
                    queues = taken.setdefault((row.name, row.state), {})
                    if sum(queues.values()) >= limit:
                        continue
                    queues[row.queue] = queues.get(row.queue, 0) + 1
                elif row.state is JobState.QUEUED and row.run_at <= now:
                    due[row.queue] = due.get(row.queue, 0) + 1
                    if row.queue not in oldest or row.run_at < oldest[row.queue]:
                        oldest[row.queue] = row.run_at
                counts[(row.queue, row.state)] = counts.get((row.queue, row.state), 0) + 1
        capped_queues = {
            (queue, state)
            for (_name, state), queues in taken.items()
            if sum(queues.values()) >= limit
            for queue in queues
        }
        stats = []
        for (queue, state), jobs in counts.items():
            ready = oldest.get(queue) if state is JobState.QUEUED else None
            stats.append(
                QueueStats(
                    queue=queue,
                    state=state,
                    jobs=jobs,
                    oldest_ready_seconds=None
                    if ready is None
                    else max(0.0, (now - ready).total_seconds()),
                    exact=(queue, state) not in capped_queues,
                    ready=0
                    if state is not JobState.QUEUED or queue in paused_queues
                    else due.get(queue, 0),
                )
            )
        stats.sort(key=lambda stat: (stat.queue, stat.state.value))
        return stats
