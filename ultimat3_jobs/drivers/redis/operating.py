"""The Redis driver's operator reads and writes, pauses and counters (``operator.sql``,
``pauses.sql``, ``counters.sql`` and ``job_get``, ``job_cancel``, ``job_requeue`` of
``jobs.sql``), one script each."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime

from ultimat3_jobs.drivers.base import (
    QUEUE_STATS_ROWS,
    JobListQuery,
    check_counter_period,
    check_pause,
    check_queue_stats_limit,
    cursor_gone,
)
from ultimat3_jobs.drivers.redis import codec
from ultimat3_jobs.drivers.redis.connection import RedisStore
from ultimat3_jobs.drivers.redis.scripts import speaks_seam_errors
from ultimat3_jobs.errors import JobDuplicate, JobNotFound, JobNotRequeueable
from ultimat3_jobs.types import (
    COUNTER_OUTCOMES,
    BulkResult,
    CounterPeriod,
    CounterRow,
    CounterTotal,
    JobPage,
    JobRecord,
    JobState,
    Pause,
    PauseScope,
    QueueStats,
    cancel_entry,
)


def _filter(values: Sequence[str] | None) -> str:
    return "" if values is None else "\n".join(values)


@speaks_seam_errors
class OperatorMethods(RedisStore):
    """What the admin, the command and the operator API read and change."""

    def job_get(self, *, job_id: uuid.UUID) -> JobRecord | None:
        row = codec.pairs(self._run("job_get", [str(job_id)]))
        return codec.job_record(job_id, row) if row else None

    def job_cancel(
        self, *, job_id: uuid.UUID, reason: str | None = None, cancelled_by: str | None = None
    ) -> bool:
        entry = cancel_entry(reason, cancelled_by)
        text = None if entry is None else codec.error_entry(entry)
        return bool(self._run("job_cancel", [str(job_id), codec.optional(text)]))

    def job_list_page(self, *, query: JobListQuery) -> JobPage:
        if any("\n" in value for value in [*(query.queues or ()), *(query.names or ())]):
            # No queue or job name holds a line break: such a filter matches nothing.
            return JobPage(jobs=(), next_cursor=None)
        args = [
            "" if query.after is None else str(query.after),
            str(query.limit),
            _filter(query.states),
            _filter(query.queues),
            _filter(query.names),
            codec.optional(query.tenant),
            codec.optional(query.search),
            "" if query.search_id is None else str(query.search_id),
        ]
        anchored, *rows = self._run("job_list", args)
        if not int(anchored):
            assert query.after is not None
            raise cursor_gone(query.after)
        jobs = tuple(codec.job_summary(codec.pairs(row)) for row in rows[: query.limit])
        more = len(rows) > query.limit
        return JobPage(jobs=jobs, next_cursor=jobs[-1].id if more else None)

    def job_promote(self, *, job_id: uuid.UUID) -> bool:
        return bool(self._run("job_promote", [str(job_id)]))

    def job_remove(self, *, job_id: uuid.UUID) -> bool:
        return bool(self._run("job_remove", [str(job_id)]))

    def job_requeue(self, *, job_id: uuid.UUID) -> None:
        outcome, *detail = (codec.text(part) for part in self._run("job_requeue", [str(job_id)]))
        if outcome == "requeued":
            return
        if outcome == "missing":
            raise JobNotFound(f"no job has id {job_id}")
        if outcome == "duplicate":
            holder = uuid.UUID(detail[0])
            raise JobDuplicate(
                f"job {job_id} cannot be requeued: live job {holder} holds its idempotency key",
                existing_id=holder,
            )
        raise JobNotRequeueable(
            f"job {job_id} is {detail[0]}; only a completed, failed or cancelled job can be "
            "requeued"
        )

    def job_requeue_failed(self, *, name: str, limit: int) -> BulkResult:
        moved, remaining = self._run("job_requeue_failed", [name, str(max(int(limit), 0))])
        return BulkResult(moved=int(moved), remaining=int(remaining))

    def queue_stats(self, *, limit: int = QUEUE_STATS_ROWS) -> list[QueueStats]:
        check_queue_stats_limit(limit)
        now_text, *rows = self._run("queue_stats", [str(limit)])
        now = codec.moment(now_text)
        assert now is not None
        stats: dict[tuple[str, str], QueueStats] = {}
        for queue, state, jobs, oldest, ready, capped in rows:
            key = (str(codec.text(queue)), str(codec.text(state)))
            due = codec.moment(oldest)
            before = stats.get(key)
            stats[key] = QueueStats(
                queue=key[0],
                state=JobState(key[1]),
                jobs=int(jobs) + (before.jobs if before else 0),
                oldest_ready_seconds=None if due is None else max(0.0, (now - due).total_seconds()),
                exact=not int(capped) and (before.exact if before else True),
                ready=int(ready),
            )
        return [stats[key] for key in sorted(stats)]

    # -- pauses -------------------------------------------------------------------------------

    def pause_add(
        self, *, scope: PauseScope, target: str, paused_by: str = "", reason: str = ""
    ) -> bool:
        check_pause(scope, target)
        meta = json.dumps({"paused_by": paused_by, "reason": reason})
        return bool(self._run("pause_add", [scope, target, meta]))

    def pause_list(self) -> list[Pause]:
        pauses = []
        for field, created, meta in self._run("pause_list"):
            scope, target = str(codec.text(field)).split("\t", 1)
            told = json.loads(str(codec.text(meta)))
            pauses.append(
                Pause(
                    scope=scope,  # type: ignore[arg-type]
                    target=target,
                    paused_by=told["paused_by"],
                    reason=told["reason"],
                    created_at=codec.moment(created),  # type: ignore[arg-type]
                )
            )
        return pauses

    def pause_remove(self, *, scope: PauseScope, target: str) -> bool:
        check_pause(scope, target)
        return bool(self._run("pause_remove", [scope, target]))

    # -- counters -----------------------------------------------------------------------------

    def _counter_rows(self, *periods: str) -> dict[tuple[str, str, int], dict[str, int]]:
        """Every counter row of ``periods`` as ``{(name, period, bucket): counts}``."""
        rows: dict[tuple[str, str, int], dict[str, int]] = {}
        for period, flat in zip(periods, self._run("counter_read", periods), strict=True):
            for field, value in codec.pairs(flat).items():
                bucket, outcome, name = field.split("\t", 2)
                counts = rows.setdefault(
                    (name, period, int(bucket)), dict.fromkeys(COUNTER_OUTCOMES, 0)
                )
                counts[outcome] += int(value)
        return rows

    def counter_read(
        self, *, since: datetime, period: CounterPeriod = "minute"
    ) -> list[CounterRow]:
        check_counter_period(period)
        step = 3600 if period == "hour" else 60
        start = codec.micros(since) // 1_000_000 // step * step
        found = [
            CounterRow(
                name=name,
                period=period,
                bucket=codec.moment(bucket * 1_000_000),  # type: ignore[arg-type]
                **counts,
            )
            for (name, _, bucket), counts in self._counter_rows(period).items()
            if bucket >= start
        ]
        found.sort(key=lambda row: (row.bucket, row.name.encode("utf-8")))
        return found

    def counter_rollup(self, *, keep_seconds: float) -> int:
        return int(self._run("counter_rollup", [repr(float(keep_seconds))]))

    def counter_total(self) -> list[CounterTotal]:
        rows = self._counter_rows("minute", "hour")
        return CounterTotal.by_name((name, counts) for (name, _, _), counts in rows.items())
