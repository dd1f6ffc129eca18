"""``PostgresDriver``: the job store on PostgreSQL, through Django's connection for one alias.

Statements run on ``connections[database]``, so an enqueue inside ``transaction.atomic()`` on that
alias commits or rolls back with the caller's transaction. Every statement is a named one of
``sql/*.sql``; its rows are read by column name (``rows/``). This module holds the worker's job
methods; the operator's (``operating.py``), the scheduler's (``scheduling.py``), the worker
registry's (``registry.py``), the steps' (``steps.py``) and the leases' (``leases.py``) are mixed
in, each class translating its own public methods.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from django.db import DatabaseError, connections, transaction

from ultimat3_jobs.batches import RequestBatch
from ultimat3_jobs.drivers.base import (
    ENQUEUE_CHUNK,
    RESCUE_BATCH_DEFAULT,
    HandOff,
    JobDriver,
    LeaseRun,
    check_claim_queues,
    check_nack_action,
    log_lost_beats,
    log_unowned,
    log_unsettled,
    owned,
)
from ultimat3_jobs.drivers.postgres.backfills import BackfillStatements
from ultimat3_jobs.drivers.postgres.leases import LeaseStatements, one_slot
from ultimat3_jobs.drivers.postgres.listen import QueueListener
from ultimat3_jobs.drivers.postgres.operating import OperatorMethods
from ultimat3_jobs.drivers.postgres.params import (
    CLAIM_CHUNK,
    WAKE_CHANNEL,
    ack_params,
    batch_params,
    batch_statement,
    copy_rows,
    copyable,
    due_now,
    due_queues,
    enqueue_params,
    request_ids,
    settle_params,
)
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.drivers.postgres.registry import WorkerMethods
from ultimat3_jobs.drivers.postgres.rescue import mark_pending, rescue_expired
from ultimat3_jobs.drivers.postgres.retention import RetentionStatements
from ultimat3_jobs.drivers.postgres.rows import jobs as job_rows
from ultimat3_jobs.drivers.postgres.rows.result import Result, as_uuid, fetch, fetch_pipelined
from ultimat3_jobs.drivers.postgres.scheduling import SchedulerMethods
from ultimat3_jobs.drivers.postgres.steps import StepStatements
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.drivers.postgres.wake import IdleWorkers, WakeThrottle
from ultimat3_jobs.errors import JobDuplicate
from ultimat3_jobs.models import (
    Job,
    JobCounter,
    JobPause,
    JobWorker,
    SchedulerLeader,
    SchedulerTask,
)
from ultimat3_jobs.types import (
    AckItem,
    AttemptError,
    ClaimedJob,
    EnqueueRequest,
    EnqueueResult,
    ExpiredAttempt,
    FailureDecision,
    Heartbeat,
    NackAction,
    RescuedJob,
    SettleItem,
    cancel_entry,
)

logger = logging.getLogger("ultimat3_jobs.driver")

__all__ = ["WAKE_CHANNEL", "PostgresDriver", "batch_params"]


@speaks_seam_errors
class PostgresDriver(
    OperatorMethods,
    SchedulerMethods,
    WorkerMethods,
    StepStatements,
    LeaseStatements,
    RetentionStatements,
    BackfillStatements,
    JobDriver,
):
    """Jobs in ``x_jobs`` on the PostgreSQL database of a Django alias; raises the seam's
    errors, never the database's (``drivers/postgres/translate.py``)."""

    name = "postgres"
    enqueue_joins_transaction = True
    store_in_orm = True

    def __init__(self, *, database: str | None = "default") -> None:
        self.database = database or "default"
        self._jobs = Job.objects.db_manager(self.database)
        self._pauses = JobPause.objects.db_manager(self.database)
        self._crons = SchedulerTask.objects.db_manager(self.database)
        self._leaders = SchedulerLeader.objects.db_manager(self.database)
        self._workers = JobWorker.objects.db_manager(self.database)
        self._counters = JobCounter.objects.db_manager(self.database)
        self._wake_throttle = WakeThrottle()
        self._idle_workers = IdleWorkers()
        self._listeners: weakref.WeakSet[QueueListener] = weakref.WeakSet()
        self._listeners_lock = threading.Lock()

    # -- jobs -------------------------------------------------------------------------------

    def job_ack_many(self, *, items: Sequence[AckItem]) -> set[uuid.UUID]:
        if not items:
            return set()
        result = fetch(self._jobs, "job_ack_many", ack_params(items))
        landed = job_rows.ids(result)
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
        params = {"queues": names, "worker_id": worker_id, "lease_seconds": float(lease_seconds)}
        jobs: list[ClaimedJob] = []
        while len(jobs) < limit:  # a statement takes CLAIM_CHUNK at most: see job_claim
            ask = min(limit - len(jobs), CLAIM_CHUNK)
            taken = job_rows.claimed_jobs(fetch(self._jobs, "job_claim", {**params, "limit": ask}))
            jobs += taken
            if len(taken) < ask:
                break
        idle = len(jobs) < limit
        self._idle_workers.claimed(worker_id, names, float(lease_seconds), idle=idle)
        return jobs

    def job_enqueue(self, *, request: EnqueueRequest) -> EnqueueResult:
        params = enqueue_params(request)
        params["notify"] = due_now(request) and bool(
            self._wake_throttle.for_statement(self._jobs, [request.queue], channel=WAKE_CHANNEL)
        )
        # Inserts twice at most: a conflicting live row may settle between the insert and the
        # resolve, freeing its key; the second insert then takes it.
        for _ in range(2):
            if self._jobs.run("job_enqueue", params):
                return EnqueueResult(request.id, "created")
            found = fetch(self._jobs, "job_enqueue_resolve", params).first("id")
            if found is not None:
                return EnqueueResult(as_uuid(*found), "deduped")
        raise JobDuplicate(
            f"job {request.name!r} with idempotency key {request.idempotency_key!r} kept "
            "conflicting with a row that was gone when looked up; try again"
        )

    def job_enqueue_many(self, *, requests: Sequence[EnqueueRequest]) -> list[EnqueueResult]:
        if len(requests) <= ENQUEUE_CHUNK:
            return self._enqueue_chunk(requests)
        if (batch := copyable(requests)) is not None:
            return self._enqueue_copy(batch)
        chunks = [
            requests[start : start + ENQUEUE_CHUNK]
            for start in range(0, len(requests), ENQUEUE_CHUNK)
        ]
        # Whole or not at all, as one statement of one chunk is: every chunk in one
        # transaction (the caller's, if open), pipelined so that the next chunk is built while
        # the database writes this one; an error in any chunk rolls back those already sent.
        with transaction.atomic(using=self.database, savepoint=False):
            written = fetch_pipelined(self._jobs, map(self._chunk_statement, chunks))
            results: list[EnqueueResult] = []
            for chunk, result in zip(chunks, written, strict=True):
                results.extend(self._chunk_answers(chunk, result))
        return results

    def _enqueue_copy(self, batch: RequestBatch) -> list[EnqueueResult]:
        """``job_enqueue_copy``: the pause flag read, then every row in one COPY, streamed a
        chunk at a time, in one transaction (the caller's, if open)."""
        connection = connections[self.database]
        with transaction.atomic(using=self.database, savepoint=False):
            self._wake_throttle.for_statement(self._jobs, due_queues(batch), channel=WAKE_CHANNEL)
            (paused,) = fetch(self._jobs, "job_copy_paused", {"name": batch.shared.name}).first(
                "paused"
            ) or (False,)
            with (
                connection.wrap_database_errors,
                connection.connection.cursor() as cursor,
                cursor.copy(STATEMENTS["job_enqueue_copy"]) as copy,
            ):
                for text in copy_rows(batch, bool(paused)):
                    copy.write(text)
        return [EnqueueResult(job_id, "created") for job_id in batch.ids]

    def _enqueue_chunk(self, chunk: Sequence[EnqueueRequest]) -> list[EnqueueResult]:
        if not chunk:
            return []
        return self._chunk_answers(chunk, fetch(self._jobs, *self._chunk_statement(chunk)))

    def _chunk_statement(self, chunk: Sequence[EnqueueRequest]) -> tuple[str, dict[str, Any]]:
        """The statement writing one chunk (at most ``ENQUEUE_CHUNK`` requests), and its
        parameters."""
        statement, params = batch_statement(chunk)
        params["notify_queues"] = self._wake_throttle.for_statement(
            self._jobs, due_queues(chunk), channel=WAKE_CHANNEL
        )
        return statement, params

    def _chunk_answers(
        self, chunk: Sequence[EnqueueRequest], written: Result
    ) -> list[EnqueueResult]:
        """Each request's answer, from what its chunk's statement wrote: the skipped ones
        resolved to the row that holds their id or their key."""
        inserted = job_rows.batch_inserted(written, len(chunk))
        if inserted is None:
            return [EnqueueResult(job_id, "created") for job_id in request_ids(chunk)]
        skipped = [r for r in chunk if r.id not in inserted]
        answers: dict[uuid.UUID, uuid.UUID] = {}
        if skipped:
            found = fetch(
                self._jobs,
                "job_enqueue_many_resolve",
                {
                    "ids": [r.id for r in skipped],
                    "names": [r.name for r in skipped],
                    "keys": [r.idempotency_key for r in skipped],
                },
            )
            answers = job_rows.enqueue_answers(found)
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
        result = fetch(
            self._jobs,
            "job_heartbeat_many",
            {
                "ids": [job_id for job_id, _ in attempts],
                "tokens": [token for _, token in attempts],
                "progress": [given.get(job_id) for job_id, _ in attempts],
                "lease_seconds": float(lease_seconds),
            },
        )
        answered = list(result.picked("id", "renewed"))
        beat = Heartbeat(
            renewed=frozenset(as_uuid(job_id) for job_id, renewed in answered if renewed),
            busy=frozenset(as_uuid(job_id) for job_id, renewed in answered if not renewed),
        )
        log_lost_beats(attempts, beat)
        return beat

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
        check_nack_action(action)
        statement = {"retry": "job_nack_retry", "fail": "job_nack_fail", "drop": "job_nack_drop"}
        params: dict[str, Any] = {"id": job_id, "claim_token": claim_token}
        if action != "drop":
            params["error"] = json.dumps(error.as_json()) if error is not None else None
            params["counts_as_attempt"] = counts_as_attempt
            params["progress"] = progress_json
        if action == "retry":
            params["delay_seconds"] = max(0.0, float(delay_seconds))
        landed = bool(self._jobs.run(statement[action], params))
        return owned(landed, f"nack ({action})", job_id, claim_token)

    def job_settle_many(self, *, items: Sequence[SettleItem]) -> set[uuid.UUID]:
        if not items:
            return set()
        if all(item.action == "complete" for item in items):
            # The common flush (only acks): the ack statement plans in a fraction of the time.
            result = fetch(self._jobs, "job_ack_many", ack_params(items))
        else:
            result = fetch(self._jobs, "job_settle_many", settle_params(items))
        landed = job_rows.ids(result)
        log_unsettled(items, landed)
        return landed

    hands_off_slots: ClassVar[bool] = True

    def job_settle_handoff(
        self, *, items: Sequence[SettleItem], runs: Sequence[LeaseRun]
    ) -> HandOff:
        """One statement: ``job_settle_handoff`` when every ending is an ack (the worker's
        common case), else ``job_settle_many_handoff``, with no runs too (it answers which
        settled runs' rows were found); runs that ask more than one concurrency slot are
        granted none."""
        if not items:
            return HandOff(landed=set(), granted=set())
        acks = all(item.action == "complete" for item in items)
        asked = [(run, request) for run in runs if (request := one_slot(run)) is not None]
        params = {
            **(ack_params(items) if acks else settle_params(items)),
            "next_ids": [run.job_id for run, _ in asked],
            "next_tokens": [run.claim_token for run, _ in asked],
            "next_keys": [request.key for _, request in asked],
            "next_limits": [int(request.limit) for _, request in asked],
            "next_relayed": [run.relayed for run, _ in asked],
        }
        statement = "job_settle_handoff" if acks else "job_settle_many_handoff"
        result = fetch(self._jobs, statement, params)
        landed, granted, held = job_rows.handed(result)
        log_unsettled(items, landed)
        return HandOff(landed=landed, granted=granted, held=held)

    def job_progress(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, progress_json: str
    ) -> bool:
        params = {"id": job_id, "claim_token": claim_token, "progress": progress_json}
        return owned(bool(self._jobs.run("job_progress", params)), "progress", job_id, claim_token)

    def job_rescue_expired(
        self,
        *,
        decide: Callable[[ExpiredAttempt], FailureDecision],
        limit: int = RESCUE_BATCH_DEFAULT,
    ) -> list[RescuedJob]:
        return rescue_expired(self._jobs, decide=decide, limit=limit)

    # -- the connection ---------------------------------------------------------------------

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
