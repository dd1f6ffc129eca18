"""The worker registry and the wake of the PostgreSQL driver
(:class:`~ultimat3_jobs.drivers.postgres.driver.PostgresDriver`)."""

from __future__ import annotations

import functools
import logging
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence

import psycopg
from django.db import connections

from ultimat3_jobs.drivers.base import QUEUE_DEMAND_ROWS, WakeSubscription, check_heartbeat_queues
from ultimat3_jobs.drivers.postgres.bound import may_prepare
from ultimat3_jobs.drivers.postgres.listen import QueueListener, thread_session
from ultimat3_jobs.drivers.postgres.notified import STATEMENT as NOTIFIED_CLAIM
from ultimat3_jobs.drivers.postgres.notified import claim_notified
from ultimat3_jobs.drivers.postgres.params import WAKE_CHANNEL
from ultimat3_jobs.drivers.postgres.rows import operator as operator_rows
from ultimat3_jobs.drivers.postgres.rows.operator import encode_limits
from ultimat3_jobs.drivers.postgres.rows.result import fetch
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.drivers.postgres.wake import IdleWorkers
from ultimat3_jobs.models import RawStatementManager
from ultimat3_jobs.types import ClaimedJob, WorkerRecord

logger = logging.getLogger("ultimat3_jobs.wake")


@speaks_seam_errors
class WorkerMethods:
    """Mixed into the driver; reads its statement managers and its listeners."""

    _jobs: RawStatementManager
    _workers: RawStatementManager
    _idle_workers: IdleWorkers
    _listeners: weakref.WeakSet[QueueListener]
    _listeners_lock: threading.Lock

    def wake_subscribe(
        self,
        *,
        on_wake: Callable[[str], None],
        worker_id: str | None = None,
        on_hand: Callable[[ClaimedJob], None] | None = None,
    ) -> WakeSubscription | None:
        """A :class:`~ultimat3_jobs.drivers.postgres.listen.QueueListener` on its own connection
        to this alias' database; live once its first probe comes back. Every listener hears
        every wake. A wake names its queue and, sent by a single enqueue, its job: with
        ``worker_id`` and ``on_hand``, when that worker's last claim found fewer jobs than it
        asked for, the listener's thread claims the named job for it (``job_claim_notified``,
        on the listening connection: ``notified.py``) and calls ``on_hand(job)`` in place of
        ``on_wake(queue)``; a job it cannot take leaves the plain wake, and the worker's own
        claim. The claim is prepared on that session unless the alias opts out
        (``"prepare_threshold": None``)."""
        prepare = may_prepare(connections[self._workers.db], NOTIFIED_CLAIM)
        deliver = functools.partial(self._heard, on_wake, worker_id, on_hand, prepare)
        listener = QueueListener(database=self._workers.db, channel=WAKE_CHANNEL, on_wake=deliver)
        with self._listeners_lock:
            self._listeners.add(listener)
        listener.start()
        return listener

    def _heard(
        self,
        on_wake: Callable[[str], None],
        worker_id: str | None,
        on_hand: Callable[[ClaimedJob], None] | None,
        prepare: bool,
        payload: str,
    ) -> None:
        """One wake's payload, ``"<queue>"`` or ``"<queue> <job id>"``, delivered."""
        queue, _, job_id = payload.partition(" ")
        if job_id and worker_id is not None and on_hand is not None:
            job = self._claim_notified(worker_id, queue, job_id, prepare=prepare)
            if job is not None:
                on_hand(job)
                return
        on_wake(queue)

    def _claim_notified(
        self, worker_id: str, queue: str, job_id: str, *, prepare: bool
    ) -> ClaimedJob | None:
        """The notified job, claimed for ``worker_id`` if it is listed idle on ``queue`` and
        the job can be taken; ``None`` otherwise (the wake is a hint: the claim follows)."""
        session = thread_session()
        if session is None:
            return None
        listed = self._idle_workers.take(worker_id, queue)
        if listed is None:
            return None
        try:
            return claim_notified(
                session,
                job_id=uuid.UUID(job_id),
                queues=listed.queues,
                worker_id=worker_id,
                lease_seconds=listed.lease_seconds,
                prepare=prepare,
            )
        except (psycopg.Error, ValueError) as exc:
            # A broken connection fails the listener's next read too, which reconnects.
            logger.debug("jobs.wake.hand_failed: %s; the worker claims instead", exc)
            return None

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
        limits: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        names = check_heartbeat_queues(queues)
        self._workers.run(
            "worker_heartbeat",
            {
                "id": worker_id,
                "host": host,
                "pid": pid,
                "queues": names,
                "slots": slots,
                "ttl_seconds": float(ttl_seconds),
                "draining": bool(draining),
                "limit": QUEUE_DEMAND_ROWS,
                "limits": encode_limits(limits),
            },
        )

    def worker_list(self) -> list[WorkerRecord]:
        return operator_rows.workers(fetch(self._workers, "worker_list"))

    def worker_remove(self, *, worker_id: str) -> bool:
        return bool(self._workers.run("worker_remove", {"id": worker_id}))
