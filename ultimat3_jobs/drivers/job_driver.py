"""The seam: :class:`JobDriver`, the one interface the runtime speaks to a job store.

Layer L2: imports L1 only. A runtime module is handed a driver (see :func:`get_driver`); it never
imports a concrete one. Every driver passes the one parity suite (``tests/drivers/``), which checks
the semantics written in the docstrings below and in ``operating.py``, ``steps_seam.py`` and
``leases_seam.py`` (the lease store, which a driver may lack).

Rules every driver keeps:

* **Fencing.** Every write about a running attempt (ack, nack, heartbeat, progress) lands only
  where ``state = 'running'`` and the claim token matches. A miss is not an error: the method
  answers that it did not land, and the driver logs ``jobs.settle.unowned``.
* **No waiting on a body.** The worker's own writes (heartbeat, settle) never join a body's
  transaction and a heartbeat never waits on a row lock: a locked row is skipped for one beat
  and answered busy, which is not a lost lease.
* **Store time.** Due times, leases and rescue compare against the store's clock (PostgreSQL's
  ``now()``), never the caller's.
* **JSON form.** Input, results and progress are stored as the JSON text the caller encoded and
  read back parsed, so every driver answers the same values.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from ultimat3_jobs.drivers.backfill_seam import BackfillMethods
from ultimat3_jobs.drivers.common import RESCUE_BATCH_DEFAULT, WakeSubscription
from ultimat3_jobs.drivers.leases_seam import HandOff, LeaseMethods, LeaseRun
from ultimat3_jobs.drivers.operating import OperatorSeam
from ultimat3_jobs.drivers.retention_seam import RetentionMethods
from ultimat3_jobs.drivers.steps_seam import StepMethods
from ultimat3_jobs.types import (
    AckItem,
    AttemptError,
    ClaimedJob,
    CronState,
    EnqueueRequest,
    EnqueueResult,
    ExpiredAttempt,
    FailureDecision,
    FireResult,
    Heartbeat,
    Leadership,
    NackAction,
    RescuedJob,
    SettleItem,
    WorkerRecord,
)


class JobDriver(
    StepMethods, LeaseMethods, RetentionMethods, BackfillMethods, OperatorSeam, abc.ABC
):
    """A job store. Methods are named ``noun_verb[_many]``, the same name as the SQL statement
    or script that implements them and the parity tests that pin them; all arguments after
    ``self`` are keyword-only."""

    name: ClassVar[str]
    """A short name for logs and the parity suite (``postgres``, ``memory``)."""

    enqueue_joins_transaction: ClassVar[bool] = False
    """True when ``job_enqueue`` writes on the Django connection of :attr:`database`, so an
    enqueue inside ``transaction.atomic(using=database)`` commits or rolls back with it."""

    database: str | None = None
    """The Django database alias the driver writes through, if any."""

    store_in_orm: ClassVar[bool] = False
    """True when the driver's rows are the tables of the app's models (``x_jobs``,
    ``x_job_pauses``, ``x_job_workers``, ``x_scheduler_tasks``) on :attr:`database`, so that
    Django's ORM may read them. Where it is False the admin reads through the driver's operator
    methods instead (``admin/driver_rows.py``)."""

    @property
    def transaction_database(self) -> str | None:
        """The Django alias whose open transaction this driver's writes join
        (:attr:`database` when :attr:`enqueue_joins_transaction`), else ``None``: one answer for
        every caller that asks whether a job's writes and the driver's can commit together."""
        return self.database if self.enqueue_joins_transaction else None

    def __init__(self, *, database: str | None = None) -> None:
        """Drivers are built by :func:`~ultimat3_jobs.drivers.get_driver` with the configured
        ``DATABASE`` alias; one that writes elsewhere ignores it."""
        self.database = database

    # -- jobs -------------------------------------------------------------------------------

    @abc.abstractmethod
    def job_ack_many(self, *, items: Sequence[AckItem]) -> set[uuid.UUID]:
        """Settle completed attempts in one write: each lands (state ``completed``, its result
        stored, its ``progress_json`` too when given, ``finished_at`` set, the minute's
        ``completed`` counter moved) only if it is still running under its claim token.
        Answers the ids that landed. A value the store refuses fails the whole write (nothing
        lands); the caller isolates the row it refused."""

    @abc.abstractmethod
    def job_cancel(
        self, *, job_id: uuid.UUID, reason: str | None = None, cancelled_by: str | None = None
    ) -> bool:
        """Cancel a live job (``queued`` or ``running``): state ``cancelled``. A running
        attempt's later fenced writes then miss. Answers whether the job was live. With a
        ``reason`` or ``cancelled_by``, the job's ``errors`` gain one entry
        (:func:`~ultimat3_jobs.types.cancel_entry` plus the row's ``attempt`` and
        ``worker_id`` and ``at``); a job that was not live keeps its errors as they were."""

    @abc.abstractmethod
    def job_claim(
        self, *, queues: Sequence[str], limit: int, worker_id: str, lease_seconds: float
    ) -> list[ClaimedJob]:
        """Claim up to ``limit`` due jobs (``queued`` and ``run_at <= now``) from ``queues``,
        highest priority first, then earliest ``run_at``; skip paused queues and paused job
        names and rows another claim holds. Each claimed row becomes ``running`` with
        ``attempt + 1``, a fresh claim token, ``worker_id`` and a lease of the job's own
        ``lease_seconds`` or else ``lease_seconds``. An empty ``queues`` is refused
        (:class:`~ultimat3_jobs.errors.JobClaimQueuesEmpty`)."""

    @abc.abstractmethod
    def job_enqueue(self, *, request: EnqueueRequest) -> EnqueueResult:
        """Write one job unless a row with the same id, or a live row (queued or running) with
        the same name and idempotency key, exists: then nothing is written and the answer is
        ``deduped`` with that row's id. ``on_conflict`` is the caller's business: the driver
        only reports."""

    @abc.abstractmethod
    def job_enqueue_many(self, *, requests: Sequence[EnqueueRequest]) -> list[EnqueueResult]:
        """:meth:`job_enqueue` for many jobs, one write per :data:`ENQUEUE_CHUNK`, answered in
        the order given. A key repeated within the batch dedupes to its first job."""

    @abc.abstractmethod
    def job_heartbeat_many(
        self,
        *,
        attempts: Sequence[tuple[uuid.UUID, uuid.UUID]],
        lease_seconds: float,
        progress: Mapping[uuid.UUID, str] | None = None,
    ) -> Heartbeat:
        """Extend the leases of running attempts, given as ``(job_id, claim_token)``, to now
        plus the job's own ``lease_seconds`` or else ``lease_seconds``, and store the progress
        (JSON text) given for some of them in the same fenced write: the worker stores
        progress through its own connection, never through a body's.

        It never waits on a row lock: a row another transaction holds (a body's own
        transaction on the job database, an operator's write) is skipped for this beat and
        answered ``busy``, which is not a lost lease. Answers a
        :class:`~ultimat3_jobs.types.Heartbeat`: ``renewed`` ids (lease extended, progress
        stored), ``busy`` ids (still held, nothing written); a missing id has lost its lease
        (rescued, cancelled, settled)."""

    @abc.abstractmethod
    def job_mark_pending_many(
        self, *, attempts: Sequence[tuple[uuid.UUID, uuid.UUID]], pending: bool
    ) -> set[uuid.UUID]:
        """Record, fenced like a heartbeat, whether each running attempt's body is still
        waiting to start (``pending=True``) or has started after all (``pending=False``). The
        claim resets the mark; only a worker that knows a body waits writes it, so a claimed
        attempt counts as started unless marked. Answers the ids whose mark landed."""

    @abc.abstractmethod
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
        """Settle a failed attempt, fenced. ``retry``: back to ``queued``, due ``delay_seconds``
        from now. ``fail``: ``failed`` for good, kept as a dead letter. ``drop``: failed for
        good and deleted. ``error`` is appended to the job's errors and ``progress_json``, when
        given, stored (not for a drop). An attempt that does not
        count (``counts_as_attempt=False``: a release at shutdown, a refusal) gives its attempt
        back. Counters: retried, dead (or refused when it does not count), dropped. Answers
        whether it landed."""

    @abc.abstractmethod
    def job_settle_many(self, *, items: Sequence[SettleItem]) -> set[uuid.UUID]:
        """Settle many ended attempts in one write, whatever each ending: ``complete`` as
        :meth:`job_ack_many` does, ``retry``, ``fail`` and ``drop`` as :meth:`job_nack` does,
        each fenced by state and claim token, and every counter they move in the same write
        (one counter row per job name and minute for the whole batch, however many failed).
        Answers the ids that landed. A value the store refuses fails the whole write (nothing
        lands); the caller isolates the row it refused."""

    hands_off_slots: ClassVar[bool] = False
    """True when :meth:`job_settle_handoff` can pass a settled run's slot to a next run."""

    def job_settle_handoff(
        self, *, items: Sequence[SettleItem], runs: Sequence[LeaseRun]
    ) -> HandOff:
        """:meth:`job_settle_many`, and in the same write each concurrency slot a settled run
        held passes to a next run of ``runs`` (each asking one concurrency slot) of the same
        key, in the order given (see ``leases_seam.py``). A run granted none takes its slots
        through ``lease_acquire_many``. This default settles and grants none."""
        return HandOff(landed=self.job_settle_many(items=items), granted=set())

    @abc.abstractmethod
    def job_progress(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, progress_json: str
    ) -> bool:
        """Store a running attempt's progress (JSON text), fenced. Answers whether it landed.
        The worker does not call it (its heartbeat and settle carry progress); it is for
        tools and tests."""

    @abc.abstractmethod
    def job_rescue_expired(
        self,
        *,
        decide: Callable[[ExpiredAttempt], FailureDecision],
        limit: int = RESCUE_BATCH_DEFAULT,
    ) -> list[RescuedJob]:
        """Take back up to ``limit`` running attempts whose lease has ended, oldest lease
        first. ``decide`` (the worker's failure policy) answers for each what follows; the
        driver applies it as given: ``retry`` back to ``queued`` due ``delay_seconds`` from now,
        ``fail`` to ``failed`` (the dead letter), ``drop`` deletes the row. An attempt that
        counts gets a ``LeaseExpired`` error entry and moves the retried, dead or dropped
        counter; one that does not (its body never started) gives its attempt back, with no
        entry and no counter. Re-checks state, claim token and lease at the write, so a job
        settled or re-claimed meanwhile is left alone."""

    # -- the scheduler ----------------------------------------------------------------------

    @abc.abstractmethod
    def leader_attempt_elect(
        self, *, name: str, holder: str, ttl_seconds: float
    ) -> Leadership | None:
        """Take the lease ``name`` when it is free or expired, or renew it when ``holder``
        already has it, until ``ttl_seconds`` from now. The epoch moves when the holder
        changes. ``None``: another holder's lease is live."""

    @abc.abstractmethod
    def leader_resign(self, *, name: str, holder: str) -> bool:
        """Let the lease go now (a stopping leader). Answers whether ``holder`` had it."""

    @abc.abstractmethod
    def scheduler_fire(
        self,
        *,
        cron: str,
        old_watermark: datetime,
        occurrence: datetime,
        dispatch: bool,
        request: EnqueueRequest,
        leader: str,
        holder: str,
        epoch: int,
    ) -> FireResult:
        """Deal with one occurrence in one write: move the watermark of cron ``cron`` from
        ``old_watermark`` to ``occurrence`` only while ``holder`` leads ``leader`` at
        ``epoch``, and, when ``dispatch``, insert ``request`` (due now) only where the
        watermark moved."""

    @abc.abstractmethod
    def scheduler_cron_sync(self, *, names: Sequence[str]) -> dict[str, CronState]:
        """The state of each named cron; a cron never seen before starts with its watermark
        at now, so it never replays its history."""

    @abc.abstractmethod
    def scheduler_cron_read(self, *, names: Sequence[str]) -> dict[str, CronState]:
        """The state of each named cron the store holds, for an operator: a cron never seen
        is left out, and nothing is written."""

    # -- wake and the worker registry ------------------------------------------------------

    def wake_subscribe(
        self,
        *,
        on_wake: Callable[[str], None],
        worker_id: str | None = None,
        on_hand: Callable[[ClaimedJob], None] | None = None,
    ) -> WakeSubscription | None:
        """Call ``on_wake(queue)`` (from another thread) when a job becomes due on ``queue``
        through an enqueue. ``None`` means this driver has no wake: the caller polls. The poll
        stays the guarantee either way; a wake only shortens the wait. ``worker_id``: the
        worker whose claims (``job_claim``'s ``worker_id``) this subscription serves; a driver
        may then wake that worker alone for a job, in place of every subscriber (Redis).
        ``on_hand`` (with ``worker_id``): a driver may claim a job for that worker as its
        enqueue wakes it and call ``on_hand(job)`` with it, once (Redis); the worker holds it
        as one its claim took. One it never takes (the message lost or late) comes again from
        its next ``job_claim``, or goes back with ``worker_remove``, or its lease expires."""
        return None

    @abc.abstractmethod
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
        """Insert or renew a live worker's row in one write, expiring ``ttl_seconds`` from now,
        with its demand (ready jobs per queue, as :meth:`queue_demand` counts them; 0 for every
        queue while ``draining``) and ``limits``, what it shed and refused per job name
        (``WorkerRecord.limits``; a driver without a lease store keeps none)."""

    @abc.abstractmethod
    def worker_list(self) -> list[WorkerRecord]:
        """Workers whose row has not expired, by id."""

    @abc.abstractmethod
    def worker_remove(self, *, worker_id: str) -> bool:
        """Forget a worker (it stopped). Answers whether it had a row."""

    def commits_with(self, database: str) -> bool:
        """Whether an enqueue inside ``transaction.atomic(using=database)`` commits or rolls
        back with that transaction, so it needs no outbox. True for the PostgreSQL driver on
        that alias; the memory driver answers True for every alias (it holds an enqueue made
        inside ``atomic()`` blocks until they all commit, see ``drivers/memory/commit.py``)."""
        return True

    def reset_connection(self) -> None:  # optional: a driver with no connection needs none
        """Drop the calling thread's connection so the next call opens a fresh one (after a
        dropped connection, a database restart). Long-running loops call it after an error."""

    def close(self) -> None:  # optional: most drivers hold nothing to close
        """Release what the driver holds (connections, threads)."""


def describe(driver: JobDriver) -> dict[str, Any]:
    """The capabilities of a driver, for logs and checks: each of these attributes by its name."""
    return {
        attribute: getattr(driver, attribute)
        for attribute in ("name", "database", "enqueue_joins_transaction", "store_in_orm")
    }
