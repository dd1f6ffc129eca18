"""``RedisDriver``: the job store in Redis, one Lua script per operation (``lua/``).

The rules are the PostgreSQL driver's, statement for statement (``drivers/postgres/sql``): every
write about a running attempt compares the claim token inside its script; every time is Redis's
``TIME``; a live job's name and idempotency key are unique. Redis cannot join a transaction of
the project's database, so :meth:`RedisDriver.commits_with` answers False for every alias: an
enqueue inside ``transaction.atomic()`` is staged in ``x_outbox`` and published after the
commit (``model/transactions.py``). This module holds the worker's job methods; the operator's
(``operating.py``), the scheduler's and worker registry's (``scheduling.py``), the step
store's and event bus's (``steps.py``), the lease store (``leases.py``), the retention deletes
(``retention.py``) and the backfill ledger (``backfills.py``) are mixed in.
"""

from __future__ import annotations

import os
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import ultimat3_jobs.types as types
from ultimat3_jobs.drivers.base import (
    ENQUEUE_CHUNK,
    QUEUE_DEMAND_ROWS,
    RESCUE_BATCH_DEFAULT,
    JobDriver,
    WakeSubscription,
    check_claim_queues,
    check_nack_action,
    check_settle_action,
    log_lost_beats,
    log_unowned,
    owned,
)
from ultimat3_jobs.drivers.jsonb import check_jsonb_text, checked_progress
from ultimat3_jobs.drivers.redis import codec
from ultimat3_jobs.drivers.redis.backfills import BackfillScriptMethods
from ultimat3_jobs.drivers.redis.connection import DEFAULT_PREFIX
from ultimat3_jobs.drivers.redis.leases import LeaseScriptMethods
from ultimat3_jobs.drivers.redis.operating import OperatorMethods
from ultimat3_jobs.drivers.redis.retention import RetentionScriptMethods
from ultimat3_jobs.drivers.redis.scheduling import SchedulerMethods
from ultimat3_jobs.drivers.redis.scripts import speaks_seam_errors
from ultimat3_jobs.drivers.redis.steps import StepScriptMethods
from ultimat3_jobs.drivers.redis.wake import HandedOnce, RedisWake

CLAIM_ROW = len(codec.CLAIMED_FIELDS)
"""The fields of a claim's answer row; a handed job's row has one more, 'handed'."""


@speaks_seam_errors
class RedisDriver(
    OperatorMethods,
    SchedulerMethods,
    StepScriptMethods,
    LeaseScriptMethods,
    RetentionScriptMethods,
    BackfillScriptMethods,
    JobDriver,
):
    """Jobs in the Redis of a django-redis cache alias; raises the seam's errors, never the
    client's (``scripts.py``)."""

    name = "redis"
    enqueue_joins_transaction = False

    def __init__(
        self,
        *,
        database: str | None = None,
        alias: str | None = None,
        prefix: str = DEFAULT_PREFIX,
        client: Any = None,
    ) -> None:
        """``database`` is ignored (no Django database holds the jobs); ``alias`` defaults to
        ``ULTIMAT3_JOBS['REDIS_ALIAS']``; ``prefix`` is the store's base key."""
        super().__init__(alias=alias, prefix=prefix, client=client)
        self.database = None
        self._wakes: weakref.WeakSet[RedisWake] = weakref.WeakSet()
        self._handed = HandedOnce()

    # -- jobs -------------------------------------------------------------------------------

    def job_ack_many(self, *, items: Sequence[types.AckItem]) -> set[uuid.UUID]:
        return self._ack_many(items)

    def _ack_many(self, items: Sequence[types.AckItem | types.SettleItem]) -> set[uuid.UUID]:
        """Ack ``items`` (acks, or the completions of a settle, as they are): their values
        checked first, then one script."""
        if not items:
            return set()
        args: list[str] = [str(len(items))]
        for item in items:
            check_jsonb_text(item.result_json, "result")
            check_jsonb_text(item.progress_json or "null", "progress")
            args += [str(item.job_id), str(item.claim_token), item.result_json]
            args.append(codec.optional(item.progress_json))
        # The script answers the positions of the items that landed: no id is parsed back.
        landed = {items[int(position) - 1].job_id for position in self._run("job_ack_many", args)}
        for item in items:
            if item.job_id not in landed:
                log_unowned("ack", item.job_id, item.claim_token)
        return landed

    def job_claim(
        self, *, queues: Sequence[str], limit: int, worker_id: str, lease_seconds: float
    ) -> list[types.ClaimedJob]:
        names = check_claim_queues(queues)
        if limit <= 0:
            return []
        # The claim tokens: 16 random bytes per job asked for, in one read and one argument (the
        # script makes the i-th job's version 4 UUID of the i-th 16).
        random = os.urandom(16 * limit).hex()
        args = [worker_id, repr(float(lease_seconds)), str(limit), str(len(names))]
        answer = self._run("job_claim", [*args, *names, random])
        if answer and len(answer[0]) > CLAIM_ROW:  # jobs handed to this worker first: once each
            first = self._handed.first
            answer = [
                row[:CLAIM_ROW]
                for row in answer
                if len(row) == CLAIM_ROW or first(codec.text(row[6]))
            ]
        return codec.claimed_jobs(answer)

    def job_enqueue(self, *, request: types.EnqueueRequest) -> types.EnqueueResult:
        codec.check_request(request)
        # The claim token of a hand to the worker the enqueue wakes (see wake_subscribe).
        args = [*codec.enqueue_args(request), os.urandom(16).hex()]
        status, job_id = self._run("job_enqueue", args)
        return codec.enqueue_result(status, job_id)

    def job_enqueue_many(
        self, *, requests: Sequence[types.EnqueueRequest]
    ) -> list[types.EnqueueResult]:
        for request in requests:
            codec.check_request(request)
        results: list[types.EnqueueResult] = []
        for start in range(0, len(requests), ENQUEUE_CHUNK):
            chunk = requests[start : start + ENQUEUE_CHUNK]
            args: list[str] = [str(len(chunk))]
            for request in chunk:
                args += codec.enqueue_args(request)
            answer = self._run("job_enqueue_many", args)
            results += [codec.enqueue_result(status, job_id) for status, job_id in answer]
        return results

    def job_heartbeat_many(
        self,
        *,
        attempts: Sequence[tuple[uuid.UUID, uuid.UUID]],
        lease_seconds: float,
        progress: Mapping[uuid.UUID, str] | None = None,
    ) -> types.Heartbeat:
        if not attempts:
            return types.Heartbeat()
        given = checked_progress(progress)
        args = [repr(float(lease_seconds)), str(len(attempts))]
        for job_id, token in attempts:
            args += [str(job_id), str(token), codec.optional(given.get(job_id))]
        beat = types.Heartbeat(renewed=frozenset(codec.ids(self._run("job_heartbeat_many", args))))
        log_lost_beats(attempts, beat)
        return beat

    def job_mark_pending_many(
        self, *, attempts: Sequence[tuple[uuid.UUID, uuid.UUID]], pending: bool
    ) -> set[uuid.UUID]:
        if not attempts:
            return set()
        args = ["1" if pending else "0", str(len(attempts))]
        for job_id, token in attempts:
            args += [str(job_id), str(token)]
        return set(codec.ids(self._run("job_mark_pending_many", args)))

    def job_settle_many(self, *, items: Sequence[types.SettleItem]) -> set[uuid.UUID]:
        """Every value is checked before anything is written (a refused one fails the whole
        call, nothing lands): the failures' here, the completions' by ``_ack_many`` before its
        script runs; then the completions go in one script and each failure in its own
        (each script atomic, each fenced by its claim token)."""
        failures = []
        for item in items:
            check_settle_action(item.action)
            if item.action != "complete":
                failures.append((item, _checked_nack(item.action, item.error, item.progress_json)))
        landed = self._ack_many([item for item in items if item.action == "complete"])
        for item, entry in failures:
            if self._nack(
                item.job_id,
                item.claim_token,
                item.action,
                item.delay_seconds,
                entry,
                item.counts_as_attempt,
                item.progress_json,
            ):
                landed.add(item.job_id)
        return landed

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
        entry = _checked_nack(action, error, progress_json)
        return self._nack(
            job_id, claim_token, action, delay_seconds, entry, counts_as_attempt, progress_json
        )

    def _nack(
        self,
        job_id: uuid.UUID,
        claim_token: uuid.UUID,
        action: str,
        delay_seconds: float,
        entry: str | None,
        counts_as_attempt: bool,
        progress_json: str | None,
    ) -> bool:
        """The ``job_nack`` script for a nack (or a settle's failure) already checked:
        ``entry`` is :func:`_checked_nack`'s."""
        args = [
            str(job_id),
            str(claim_token),
            action,
            repr(max(0.0, float(delay_seconds))),
            codec.optional(entry),
            "1" if counts_as_attempt else "0",
            codec.optional(progress_json),
        ]
        landed = bool(self._run("job_nack", args))
        return owned(landed, f"nack ({action})", job_id, claim_token)

    def job_progress(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, progress_json: str
    ) -> bool:
        check_jsonb_text(progress_json, "progress")
        landed = bool(self._run("job_progress", [str(job_id), str(claim_token), progress_json]))
        return owned(landed, "progress", job_id, claim_token)

    def job_rescue_expired(
        self,
        *,
        decide: Callable[[types.ExpiredAttempt], types.FailureDecision],
        limit: int = RESCUE_BATCH_DEFAULT,
    ) -> list[types.RescuedJob]:
        if limit <= 0:
            return []
        expired = [
            types.ExpiredAttempt(
                id=uuid.UUID(codec.text(job_id)),
                claim_token=uuid.UUID(codec.text(token)),
                name=str(codec.text(name)),
                attempt=int(attempt),
                max_attempts=int(max_attempts),
                started=codec.text(pending) != "1",
            )
            for job_id, token, name, attempt, max_attempts, pending in self._run(
                "job_rescue_expired_scan", [str(limit)]
            )
        ]
        if not expired:
            return []
        args = [str(len(expired))]
        for attempt in expired:
            decision = decide(attempt)
            args += [str(attempt.id), str(attempt.claim_token), decision.action]
            args += [
                repr(float(decision.delay_seconds)),
                "1" if decision.counts_as_attempt else "0",
            ]
        return [
            types.RescuedJob(
                id=uuid.UUID(codec.text(job_id)),
                name=str(codec.text(name)),
                action=codec.text(action),  # type: ignore[arg-type]
                attempt=int(attempt),
            )
            for job_id, name, action, attempt in self._run("job_rescue_expired", args)
        ]

    def queue_demand(self, *, queues: Sequence[str]) -> dict[str, int]:
        names = check_claim_queues(queues)
        answer = self._run("queue_demand", [str(QUEUE_DEMAND_ROWS), *names])
        return dict(zip(names, (int(n) for n in answer), strict=True))

    def _set_times(
        self,
        job_id: uuid.UUID,
        *,
        run_at: datetime | None = None,
        lease_expires_at: datetime | None = None,
    ) -> None:
        """Move a job's ``run_at`` or ``lease_expires_at``, as the PostgreSQL tests do with an
        UPDATE (test support)."""
        args = [
            str(job_id),
            codec.optional(None if run_at is None else codec.micros(run_at)),
            codec.optional(None if lease_expires_at is None else codec.micros(lease_expires_at)),
        ]
        assert self._run("job_set_times", args) == 1, f"no job has id {job_id}"

    # -- transactions, wake, connection -------------------------------------------------------

    def commits_with(self, database: str) -> bool:
        """False: Redis never joins a transaction of a Django database, so an enqueue inside
        one is staged in ``x_outbox`` there and published after the commit."""
        return False

    def wake_subscribe(
        self,
        *,
        on_wake: Callable[[str], None],
        worker_id: str | None = None,
        on_hand: Callable[[types.ClaimedJob], None] | None = None,
    ) -> WakeSubscription | None:
        """A :class:`RedisWake`: a thread subscribed to the store's wake channel, on which
        every enqueue (and promote, requeue, fire) due now publishes its queue, and to
        ``worker_id``'s own channel, on which a single enqueue wakes that worker alone when
        its last claim on the queue found fewer jobs than it asked for. With ``on_hand``,
        such an enqueue claims its job for the worker instead (when it heads its queue) and
        hands it over on a third channel: ``on_hand(job)`` is called once per hand, whether
        the message or the worker's next claim (message lost) brings it first."""
        own = hand = handed = None
        if worker_id is not None:
            own = f"{self.prefix}:wake:{worker_id}"
        if worker_id is not None and on_hand is not None:
            hand = f"{self.prefix}:hand:{worker_id}"

            def handed(message: str) -> None:
                job = codec.handed_job(message)
                if self._handed.first(str(job.claim_token)):
                    on_hand(job)

        subscription = RedisWake(
            self.redis(),
            f"{self.prefix}:wake",
            on_wake,
            own_channel=own,
            hand_channel=hand,
            on_hand=handed,
        )
        self._wakes.add(subscription)
        return subscription

    def reset_connection(self) -> None:
        """Drop the pool's idle connections; the next call opens a fresh one."""
        client = self._client
        if client is not None:
            client.connection_pool.disconnect(inuse_connections=False)

    def close(self) -> None:
        """Close the wake subscriptions this driver opened."""
        for subscription in list(self._wakes):
            subscription.close()
        self._wakes.clear()


def _checked_nack(
    action: str, error: types.AttemptError | None, progress_json: str | None
) -> str | None:
    """A nack's error entry as text (none for a drop or no error), and its progress checked:
    each refused (``StoreRefused``) where jsonb would refuse it, before anything is written."""
    entry = None
    if error is not None and action != "drop":
        entry = codec.error_entry(error.as_json())
    check_jsonb_text(progress_json or "null", "progress")
    return entry
