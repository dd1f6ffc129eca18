"""``PostgresDriver``: the job store on PostgreSQL, through Django's connection for one alias.

Statements run on ``connections[database]``, so an enqueue inside ``transaction.atomic()`` on that
alias commits or rolls back with the caller's transaction. Every statement is a named one of
``sql/*.sql``, reached through the models' raw-SQL managers.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import DatabaseError, connections, transaction

from ultimat3_jobs.drivers.base import (
    ENQUEUE_CHUNK,
    QUEUE_DEMAND_ROWS,
    QUEUE_STATS_ROWS,
    RESCUE_BATCH_DEFAULT,
    JobDriver,
    WakeSubscription,
    check_claim_queues,
    check_counter_period,
    check_job_list,
    check_pause,
    cursor_gone,
    log_lost_beats,
    log_unowned,
)
from ultimat3_jobs.drivers.postgres.listen import QueueListener
from ultimat3_jobs.drivers.postgres.rescue import mark_pending, rescue_expired
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.drivers.postgres.wake import WakeThrottle
from ultimat3_jobs.errors import JobDuplicate, JobNotFound, JobNotRequeueable
from ultimat3_jobs.models import (
    Job,
    JobCounter,
    JobPause,
    JobWorker,
    SchedulerLeader,
    SchedulerTask,
)
from ultimat3_jobs.serialization import decode_json
from ultimat3_jobs.types import (
    AckItem,
    AttemptError,
    BulkResult,
    ClaimedJob,
    CounterPeriod,
    CounterRow,
    CounterTotal,
    EnqueueRequest,
    EnqueueResult,
    ExpiredAttempt,
    FailureDecision,
    FireResult,
    Heartbeat,
    JobPage,
    JobRecord,
    JobState,
    JobSummary,
    Leadership,
    NackAction,
    Pause,
    PauseScope,
    QueueStats,
    RescuedJob,
    TaskState,
    WorkerRecord,
    cancel_entry,
)


def _enqueue_params(request: EnqueueRequest) -> dict[str, Any]:
    return {
        "id": request.id,
        "name": request.name,
        "queue": request.queue,
        "priority": request.priority,
        "run_at": request.run_at,
        "delay_seconds": request.delay_seconds,
        "input": request.input_json,
        "idempotency_key": request.idempotency_key,
        "tenant_id": request.tenant_id,
        "enqueued_by": request.enqueued_by,
        "max_attempts": request.max_attempts,
        "lease_seconds": request.lease_seconds,
        "traceparent": request.traceparent,
    }


def batch_params(chunk: Sequence[EnqueueRequest]) -> dict[str, list[Any]]:
    """A batch of requests as one array parameter per column (``unnest`` in the statement)."""
    return {
        "ids": [r.id for r in chunk],
        "names": [r.name for r in chunk],
        "queues": [r.queue for r in chunk],
        "priorities": [r.priority for r in chunk],
        "run_ats": [r.run_at for r in chunk],
        "delays": [r.delay_seconds for r in chunk],
        "inputs": [r.input_json for r in chunk],
        "keys": [r.idempotency_key for r in chunk],
        "tenants": [r.tenant_id for r in chunk],
        "enqueued_bys": [r.enqueued_by for r in chunk],
        "max_attempts": [r.max_attempts for r in chunk],
        "lease_seconds": [r.lease_seconds for r in chunk],
        "traceparents": [r.traceparent for r in chunk],
    }


def _as_uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


logger = logging.getLogger("ultimat3_jobs.driver")

WAKE_CHANNEL = "ultimat3_jobs"


def _due_now(request: EnqueueRequest) -> bool:
    return request.run_at is None and not request.delay_seconds


@speaks_seam_errors
class PostgresDriver(JobDriver):
    """Jobs in ``x_jobs`` on the PostgreSQL database of a Django alias; raises the seam's
    errors, never the database's (``drivers/postgres/translate.py``)."""

    name = "postgres"
    enqueue_joins_transaction = True

    def __init__(self, *, database: str | None = "default") -> None:
        self.database = database or "default"
        self._jobs = Job.objects.db_manager(self.database)
        self._pauses = JobPause.objects.db_manager(self.database)
        self._tasks = SchedulerTask.objects.db_manager(self.database)
        self._leaders = SchedulerLeader.objects.db_manager(self.database)
        self._workers = JobWorker.objects.db_manager(self.database)
        self._counters = JobCounter.objects.db_manager(self.database)
        self._wake_throttle = WakeThrottle()
        self._listeners: weakref.WeakSet[QueueListener] = weakref.WeakSet()
        self._listeners_lock = threading.Lock()

    # -- jobs -------------------------------------------------------------------------------

    def job_ack_many(self, *, items: Sequence[AckItem]) -> set[uuid.UUID]:
        if not items:
            return set()
        rows = self._jobs.run(
            "job_ack_many",
            {
                "ids": [item.job_id for item in items],
                "tokens": [item.claim_token for item in items],
                "results": [item.result_json for item in items],
                "progress": [item.progress_json for item in items],
            },
        )
        landed = {_as_uuid(row[0]) for row in rows}
        for item in items:
            if item.job_id not in landed:
                log_unowned("ack", item.job_id, item.claim_token)
        return landed

    def job_cancel(
        self, *, job_id: uuid.UUID, reason: str | None = None, cancelled_by: str | None = None
    ) -> bool:
        entry = cancel_entry(reason, cancelled_by)
        params = {"id": job_id, "entry": None if entry is None else json.dumps(entry)}
        return bool(self._jobs.run("job_cancel", params))

    def job_claim(
        self, *, queues: Sequence[str], limit: int, worker_id: str, lease_seconds: float
    ) -> list[ClaimedJob]:
        names = check_claim_queues(queues)
        if limit <= 0:
            return []
        rows = self._jobs.run(
            "job_claim",
            {
                "queues": names,
                "limit": limit,
                "worker_id": worker_id,
                "lease_seconds": float(lease_seconds),
            },
        )
        rows.sort(key=lambda row: (-row[7], row[12]))
        return [
            ClaimedJob(
                id=_as_uuid(row[0]),
                name=row[1],
                queue=row[2],
                input=decode_json(row[3]),
                attempt=row[4],
                max_attempts=row[5],
                claim_token=_as_uuid(row[6]),
                priority=row[7],
                tenant_id=row[8],
                lease_expires_at=row[9],
                enqueued_at=row[10],
                traceparent=row[11],
            )
            for row in rows
        ]

    def job_enqueue(self, *, request: EnqueueRequest) -> EnqueueResult:
        params = _enqueue_params(request)
        params["notify"] = _due_now(request) and bool(
            self._wake_throttle.for_statement(self._jobs, [request.queue], channel=WAKE_CHANNEL)
        )
        # Inserts twice at most: a conflicting live row may settle between the insert and the
        # resolve, freeing its key; the second insert then takes it.
        for _ in range(2):
            if self._jobs.run("job_enqueue", params):
                return EnqueueResult(request.id, "created")
            rows = self._jobs.run("job_enqueue_resolve", params)
            if rows:
                return EnqueueResult(_as_uuid(rows[0][0]), "deduped")
        raise JobDuplicate(
            f"job {request.name!r} with idempotency key {request.idempotency_key!r} kept "
            "conflicting with a row that was gone when looked up; try again"
        )

    def job_enqueue_many(self, *, requests: Sequence[EnqueueRequest]) -> list[EnqueueResult]:
        results: list[EnqueueResult] = []
        for start in range(0, len(requests), ENQUEUE_CHUNK):
            results.extend(self._enqueue_chunk(requests[start : start + ENQUEUE_CHUNK]))
        return results

    def _enqueue_chunk(self, chunk: Sequence[EnqueueRequest]) -> list[EnqueueResult]:
        if not chunk:
            return []
        inserted = {
            _as_uuid(row[0])
            for row in self._jobs.run(
                "job_enqueue_many",
                {
                    **batch_params(chunk),
                    "notify_queues": self._wake_throttle.for_statement(
                        self._jobs,
                        (r.queue for r in chunk if _due_now(r)),
                        channel=WAKE_CHANNEL,
                    ),
                },
            )
        }
        skipped = [r for r in chunk if r.id not in inserted]
        answers: dict[uuid.UUID, uuid.UUID] = {}
        if skipped:
            rows = self._jobs.run(
                "job_enqueue_many_resolve",
                {
                    "ids": [r.id for r in skipped],
                    "names": [r.name for r in skipped],
                    "keys": [r.idempotency_key for r in skipped],
                },
            )
            # A row holding the requested id wins over the live row holding its key.
            for requested, found, _same_id in sorted(rows, key=lambda row: not row[2]):
                answers.setdefault(_as_uuid(requested), _as_uuid(found))
        results: list[EnqueueResult] = []
        for request in chunk:
            if request.id in inserted:
                # An id repeated within the batch was written once: its later copies fall
                # through to job_enqueue, which answers them deduped.
                inserted.discard(request.id)
                results.append(EnqueueResult(request.id, "created"))
            elif request.id in answers:
                results.append(EnqueueResult(answers[request.id], "deduped"))
            else:
                # Neither inserted nor found: its conflicting row settled meanwhile.
                results.append(self.job_enqueue(request=request))
        return results

    def job_get(self, *, job_id: uuid.UUID) -> JobRecord | None:
        rows = self._jobs.run("job_get", {"id": job_id})
        if not rows:
            return None
        row = rows[0]
        return JobRecord(
            id=_as_uuid(row[0]),
            name=row[1],
            queue=row[2],
            state=JobState(row[3]),
            priority=row[4],
            run_at=row[5],
            input=decode_json(row[6]),
            idempotency_key=row[7],
            tenant_id=row[8],
            enqueued_by=row[9],
            attempt=row[10],
            max_attempts=row[11],
            worker_id=row[12],
            lease_expires_at=row[13],
            progress=decode_json(row[14]),
            result=decode_json(row[15]),
            errors=decode_json(row[16]) or [],
            created_at=row[17],
            started_at=row[18],
            finished_at=row[19],
        )

    def job_heartbeat_many(
        self,
        *,
        attempts: Sequence[tuple[uuid.UUID, uuid.UUID]],
        lease_seconds: float,
        progress: Mapping[uuid.UUID, str] | None = None,
    ) -> Heartbeat:
        if not attempts:
            return Heartbeat()
        given = progress or {}
        rows = self._jobs.run(
            "job_heartbeat_many",
            {
                "ids": [job_id for job_id, _ in attempts],
                "tokens": [token for _, token in attempts],
                "progress": [given.get(job_id) for job_id, _ in attempts],
                "lease_seconds": float(lease_seconds),
            },
        )
        beat = Heartbeat(
            renewed=frozenset(_as_uuid(row[0]) for row in rows if row[1]),
            busy=frozenset(_as_uuid(row[0]) for row in rows if not row[1]),
        )
        log_lost_beats(attempts, beat)
        return beat

    def job_list(
        self,
        *,
        states: Sequence[str] | None = None,
        queues: Sequence[str] | None = None,
        names: Sequence[str] | None = None,
        tenant: str | None = None,
        search: str | None = None,
        after: uuid.UUID | None = None,
        limit: int = 50,
    ) -> JobPage:
        query = check_job_list(
            states=states,
            queues=queues,
            names=names,
            tenant=tenant,
            search=search,
            after=after,
            limit=limit,
        )
        rows = self._jobs.run(
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
        if query.after is not None and not rows[0][0]:
            raise cursor_gone(query.after)
        jobs = [
            JobSummary(
                id=_as_uuid(row[1]),
                name=row[2],
                queue=row[3],
                state=JobState(row[4]),
                priority=row[5],
                run_at=row[6],
                idempotency_key=row[7],
                tenant_id=row[8],
                attempt=row[9],
                max_attempts=row[10],
                worker_id=row[11],
                error_count=int(row[12]),
                last_error_class=row[13],
                last_error_message=row[14],
                created_at=row[15],
                started_at=row[16],
                finished_at=row[17],
            )
            for row in rows
            if row[1] is not None
        ]
        more = len(jobs) > query.limit
        page = tuple(jobs[: query.limit])
        return JobPage(jobs=page, next_cursor=page[-1].id if more else None)

    def job_mark_pending_many(
        self, *, attempts: Sequence[tuple[uuid.UUID, uuid.UUID]], pending: bool
    ) -> set[uuid.UUID]:
        return mark_pending(self._jobs, attempts=attempts, pending=pending)

    def job_nack(
        self,
        *,
        job_id: uuid.UUID,
        claim_token: uuid.UUID,
        action: NackAction,
        delay_seconds: float = 0.0,
        error: AttemptError | None = None,
        counts_as_attempt: bool = True,
        progress_json: str | None = None,
    ) -> bool:
        statement = {"retry": "job_nack_retry", "fail": "job_nack_fail", "drop": "job_nack_drop"}
        params: dict[str, Any] = {"id": job_id, "claim_token": claim_token}
        if action != "drop":
            params["error"] = json.dumps(error.as_json()) if error is not None else None
            params["counts_as_attempt"] = counts_as_attempt
            params["progress"] = progress_json
        if action == "retry":
            params["delay_seconds"] = max(0.0, float(delay_seconds))
        landed = bool(self._jobs.run(statement[action], params))
        if not landed:
            log_unowned(f"nack ({action})", job_id, claim_token)
        return landed

    def job_progress(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, progress_json: str
    ) -> bool:
        landed = bool(
            self._jobs.run(
                "job_progress",
                {"id": job_id, "claim_token": claim_token, "progress": progress_json},
            )
        )
        if not landed:
            log_unowned("progress", job_id, claim_token)
        return landed

    def job_promote(self, *, job_id: uuid.UUID) -> bool:
        return bool(self._jobs.run("job_promote", {"id": job_id}))

    def job_remove(self, *, job_id: uuid.UUID) -> bool:
        return bool(self._jobs.run("job_remove", {"id": job_id}))

    def job_requeue(self, *, job_id: uuid.UUID) -> None:
        if self._jobs.run("job_requeue", {"id": job_id}):
            return
        rows = self._jobs.run("job_requeue_classify", {"id": job_id})
        if not rows:
            raise JobNotFound(f"no job has id {job_id}")
        state, holder = rows[0]
        if holder is not None:
            raise JobDuplicate(
                f"job {job_id} cannot be requeued: live job {holder} holds its idempotency key",
                existing_id=_as_uuid(holder),
            )
        raise JobNotRequeueable(
            f"job {job_id} is {state}; only a completed, failed or cancelled job can be requeued"
        )

    def job_requeue_failed(self, *, name: str, limit: int) -> BulkResult:
        moved, remaining, _ = self._jobs.run("job_requeue_failed", {"name": name, "limit": limit})[
            0
        ]
        return BulkResult(moved=int(moved), remaining=int(remaining))

    def job_rescue_expired(
        self,
        *,
        decide: Callable[[ExpiredAttempt], FailureDecision],
        limit: int = RESCUE_BATCH_DEFAULT,
    ) -> list[RescuedJob]:
        return rescue_expired(self._jobs, decide=decide, limit=limit)

    # -- queues and pauses ----------------------------------------------------------------

    def pause_add(
        self, *, scope: PauseScope, target: str, paused_by: str = "", reason: str = ""
    ) -> bool:
        check_pause(scope, target)
        params = {"scope": scope, "target": target, "paused_by": paused_by, "reason": reason}
        return bool(self._pauses.run("pause_add", params))

    def pause_list(self) -> list[Pause]:
        return [
            Pause(scope=row[0], target=row[1], paused_by=row[2], reason=row[3], created_at=row[4])
            for row in self._pauses.run("pause_list")
        ]

    def pause_remove(self, *, scope: PauseScope, target: str) -> bool:
        check_pause(scope, target)
        params = {"scope": scope, "target": target}
        with transaction.atomic(using=self.database):
            removed = bool(self._pauses.run("pause_remove", params))
            if scope == "job":
                self._pauses.run("pause_unflag", params)
        return removed

    def queue_demand(self, *, queues: Sequence[str]) -> dict[str, int]:
        names = check_claim_queues(queues)
        rows = self._jobs.run("queue_demand", {"queues": names, "limit": QUEUE_DEMAND_ROWS})
        return {row[0]: int(row[1]) for row in rows}

    def queue_stats(self, *, limit: int = QUEUE_STATS_ROWS) -> list[QueueStats]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"queue_stats counts up to a positive limit; got {limit!r}")
        stats = [
            QueueStats(
                queue=row[0],
                state=JobState(row[1]),
                jobs=int(row[2]),
                oldest_ready_seconds=None if row[3] is None else max(0.0, float(row[3])),
                exact=bool(row[4]),
                ready=int(row[5]),
            )
            for row in self._jobs.run("queue_stats", {"limit": limit})
        ]
        # Sorted here, by code point, whatever the database's collation.
        stats.sort(key=lambda stat: (stat.queue, stat.state.value))
        return stats

    # -- counters ---------------------------------------------------------------------------

    def counter_read(
        self, *, since: datetime, period: CounterPeriod = "minute"
    ) -> list[CounterRow]:
        rows = self._counters.run(
            "counter_read", {"since": since, "period": check_counter_period(period)}
        )
        return [
            CounterRow(
                name=row[0],
                period=row[1],
                bucket=row[2],
                completed=row[3],
                retried=row[4],
                dead=row[5],
                dropped=row[6],
                refused=row[7],
                cancelled=row[8],
            )
            for row in rows
        ]

    def counter_rollup(self, *, keep_seconds: float) -> int:
        rows = self._jobs.run("counter_rollup", {"keep_seconds": float(keep_seconds)})
        return int(rows[0][0]) if rows else 0

    def counter_total(self) -> list[CounterTotal]:
        return [
            CounterTotal(
                name=row[0],
                completed=int(row[1]),
                retried=int(row[2]),
                dead=int(row[3]),
                dropped=int(row[4]),
                refused=int(row[5]),
                cancelled=int(row[6]),
            )
            for row in self._counters.run("counter_total")
        ]

    # -- wake and the worker registry ------------------------------------------------------

    def wake_subscribe(self, *, on_wake: Callable[[str], None]) -> WakeSubscription | None:
        """A :class:`~ultimat3_jobs.drivers.postgres.listen.QueueListener` on its own connection
        to this alias' database; live once its first probe comes back."""
        listener = QueueListener(database=self._workers.db, channel=WAKE_CHANNEL, on_wake=on_wake)
        with self._listeners_lock:
            self._listeners.add(listener)
        listener.start()
        return listener

    def worker_heartbeat(
        self,
        *,
        worker_id: str,
        host: str,
        pid: int,
        queues: Sequence[str],
        slots: int,
        ttl_seconds: float,
        draining: bool = False,
    ) -> None:
        if isinstance(queues, str):
            raise TypeError("queues must be a sequence of queue names, not one string")
        self._workers.run(
            "worker_heartbeat",
            {
                "id": worker_id,
                "host": host,
                "pid": pid,
                "queues": list(dict.fromkeys(queues)),
                "slots": slots,
                "ttl_seconds": float(ttl_seconds),
                "draining": bool(draining),
                "limit": QUEUE_DEMAND_ROWS,
            },
        )

    def worker_list(self) -> list[WorkerRecord]:
        return [
            WorkerRecord(
                id=row[0],
                host=row[1],
                pid=row[2],
                queues=decode_json(row[3]),
                slots=row[4],
                demand={queue: int(count) for queue, count in decode_json(row[5]).items()},
                started_at=row[6],
                heartbeat_at=row[7],
                expires_at=row[8],
            )
            for row in self._workers.run("worker_list")
        ]

    def worker_remove(self, *, worker_id: str) -> bool:
        return bool(self._workers.run("worker_remove", {"id": worker_id}))

    # -- the scheduler ----------------------------------------------------------------------

    def leader_attempt_elect(
        self, *, name: str, holder: str, ttl_seconds: float
    ) -> Leadership | None:
        rows = self._leaders.run(
            "leader_attempt_elect",
            {"name": name, "holder": holder, "ttl_seconds": float(ttl_seconds)},
        )
        if not rows:
            return None
        epoch, expires_at, store_now = rows[0]
        return Leadership(epoch=int(epoch), expires_at=expires_at, store_now=store_now)

    def leader_resign(self, *, name: str, holder: str) -> bool:
        return bool(self._leaders.run("leader_resign", {"name": name, "holder": holder}))

    def scheduler_fire(
        self,
        *,
        task: str,
        old_watermark: datetime,
        occurrence: datetime,
        dispatch: bool,
        request: EnqueueRequest,
        leader: str,
        holder: str,
        epoch: int,
    ) -> FireResult:
        params = _enqueue_params(request)
        params.update(
            task=task,
            old_watermark=old_watermark,
            occurrence=occurrence,
            dispatch=dispatch,
            leader=leader,
            holder=holder,
            epoch=epoch,
        )
        moved, job_id, _ = self._tasks.run("scheduler_fire", params)[0]
        return FireResult(moved=bool(moved), job_id=_as_uuid(job_id) if job_id else None)

    def scheduler_task_sync(self, *, names: Sequence[str]) -> dict[str, TaskState]:
        if not names:
            return {}
        rows = self._tasks.run("scheduler_task_sync", {"names": list(dict.fromkeys(names))})
        return {
            row[0]: TaskState(
                name=row[0],
                watermark=row[1],
                last_fire_at=row[2],
                last_job_id=_as_uuid(row[3]) if row[3] else None,
            )
            for row in rows
        }

    def commits_with(self, database: str) -> bool:
        return database == self._jobs.db

    def reset_connection(self) -> None:
        """Close this thread's connection to the alias; Django opens a fresh one on the next
        statement (after ``pg_terminate_backend``, a restart, a network cut)."""
        try:
            connections[self._jobs.db].close()
        except DatabaseError:
            logger.debug("closing a broken connection failed", exc_info=True)

    def close(self) -> None:
        """Close the wake subscriptions this driver opened."""
        with self._listeners_lock:
            listeners = list(self._listeners)
            self._listeners.clear()
        for listener in listeners:
            listener.close()
