"""The operator's reads and writes of the PostgreSQL driver
(:class:`~ultimat3_jobs.drivers.postgres.driver.PostgresDriver`): one job, the job list, promote,
remove, requeue, queue figures, pauses and counters."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from django.db import transaction

import ultimat3_jobs.types as types
from ultimat3_jobs.drivers.base import (
    QUEUE_DEMAND_ROWS,
    QUEUE_STATS_ROWS,
    JobListQuery,
    check_claim_queues,
    check_counter_period,
    check_pause,
    check_queue_stats_limit,
    cursor_gone,
)
from ultimat3_jobs.drivers.postgres.rows import jobs as job_rows
from ultimat3_jobs.drivers.postgres.rows import operator as operator_rows
from ultimat3_jobs.drivers.postgres.rows.result import as_uuid, fetch
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.errors import JobDuplicate, JobNotFound, JobNotRequeueable
from ultimat3_jobs.models import RawStatementManager


@speaks_seam_errors
class OperatorMethods:
    """Mixed into the driver; reads its statement managers."""

    database: str
    _jobs: RawStatementManager
    _pauses: RawStatementManager
    _counters: RawStatementManager

    # -- one job and the job list ---------------------------------------------------------

    def job_get(self, *, job_id: uuid.UUID) -> types.JobRecord | None:
        return job_rows.job_record(fetch(self._jobs, "job_get", {"id": job_id}))

    def job_list_page(self, *, query: JobListQuery) -> types.JobPage:
        result = fetch(
            self._jobs,
            "job_list",
            {
                "states": query.states,
                "queues": query.queues,
                "names": query.names,
                "tenant": query.tenant,
                "search": query.search,
                "search_id": query.search_id,
                "after": query.after,
                # One row more than the page: whether it comes back says whether a next page
                # exists.
                "limit": query.limit + 1,
            },
        )
        if query.after is not None and not job_rows.list_anchored(result):
            raise cursor_gone(query.after)
        jobs = job_rows.job_summaries(result)
        more = len(jobs) > query.limit
        page = tuple(jobs[: query.limit])
        return types.JobPage(jobs=page, next_cursor=page[-1].id if more else None)

    # -- operator writes ------------------------------------------------------------------

    def job_promote(self, *, job_id: uuid.UUID) -> bool:
        return bool(self._jobs.run("job_promote", {"id": job_id}))

    def job_remove(self, *, job_id: uuid.UUID) -> bool:
        return bool(self._jobs.run("job_remove", {"id": job_id}))

    def job_requeue(self, *, job_id: uuid.UUID) -> None:
        if self._jobs.run("job_requeue", {"id": job_id}):
            return
        found = fetch(self._jobs, "job_requeue_classify", {"id": job_id}).first("state", "holder")
        if found is None:
            raise JobNotFound(f"no job has id {job_id}")
        state, holder = found
        if holder is not None:
            raise JobDuplicate(
                f"job {job_id} cannot be requeued: live job {holder} holds its idempotency key",
                existing_id=as_uuid(holder),
            )
        raise JobNotRequeueable(
            f"job {job_id} is {state}; only a completed, failed or cancelled job can be requeued"
        )

    def job_requeue_failed(self, *, name: str, limit: int) -> types.BulkResult:
        result = fetch(self._jobs, "job_requeue_failed", {"name": name, "limit": limit})
        moved, remaining = result.first("moved", "remaining") or (0, 0)
        return types.BulkResult(moved=int(moved), remaining=int(remaining))

    # -- queues and pauses ----------------------------------------------------------------

    def pause_add(
        self, *, scope: types.PauseScope, target: str, paused_by: str = "", reason: str = ""
    ) -> bool:
        check_pause(scope, target)
        params = {"scope": scope, "target": target, "paused_by": paused_by, "reason": reason}
        return bool(self._pauses.run("pause_add", params))

    def pause_list(self) -> list[types.Pause]:
        return operator_rows.pauses(fetch(self._pauses, "pause_list"))

    def pause_remove(self, *, scope: types.PauseScope, target: str) -> bool:
        check_pause(scope, target)
        params = {"scope": scope, "target": target}
        with transaction.atomic(using=self.database):
            removed = bool(self._pauses.run("pause_remove", params))
            if scope == "job":
                self._pauses.run("pause_unflag", params)
        return removed

    def queue_demand(self, *, queues: Sequence[str]) -> dict[str, int]:
        names = check_claim_queues(queues)
        params = {"queues": names, "limit": QUEUE_DEMAND_ROWS}
        return operator_rows.queue_demand(fetch(self._jobs, "queue_demand", params))

    def queue_stats(self, *, limit: int = QUEUE_STATS_ROWS) -> list[types.QueueStats]:
        check_queue_stats_limit(limit)
        return operator_rows.queue_stats(fetch(self._jobs, "queue_stats", {"limit": limit}))

    # -- counters ---------------------------------------------------------------------------

    def counter_read(
        self, *, since: datetime, period: types.CounterPeriod = "minute"
    ) -> list[types.CounterRow]:
        params = {"since": since, "period": check_counter_period(period)}
        return operator_rows.counter_rows(fetch(self._counters, "counter_read", params))

    def counter_rollup(self, *, keep_seconds: float) -> int:
        params = {"keep_seconds": float(keep_seconds)}
        return operator_rows.count(fetch(self._jobs, "counter_rollup", params))

    def counter_total(self) -> list[types.CounterTotal]:
        return operator_rows.counter_totals(fetch(self._counters, "counter_total"))
