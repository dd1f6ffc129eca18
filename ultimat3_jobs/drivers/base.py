"""The seam: :class:`JobDriver`, the one interface the runtime speaks to a job store.

Layer L2: imports L1 only. A runtime module is handed a driver (see :func:`get_driver`); it never
imports a concrete one. Every driver passes the one parity suite (``tests/drivers/``), which checks
the semantics written in the docstrings below.

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
import contextlib
import contextvars
import logging
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Protocol

from ultimat3_jobs.errors import JobClaimQueuesEmpty, JobPageInvalid, PauseInvalid
from ultimat3_jobs.types import (
    COUNTER_PERIODS,
    PAUSE_SCOPES,
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
    Leadership,
    NackAction,
    Pause,
    PauseScope,
    QueueStats,
    RescuedJob,
    SettleItem,
    TaskState,
    WorkerRecord,
)

ENQUEUE_CHUNK = 1000
"""``job_enqueue_many`` writes at most this many jobs per statement."""

QUEUE_DEMAND_ROWS = 1000
"""``queue_demand`` counts ready jobs up to this many per queue: a bounded read at any depth."""

RESCUE_BATCH_DEFAULT = 500

OUTBOX_ERROR_CHARS = 2000
"""``outbox_record_failure`` keeps this many characters of a row's error."""


def outbox_error_text(error: str) -> str:
    """A publish error as every outbox keeps it: text PostgreSQL can store (a NUL, or a lone
    surrogate, would make the write itself fail), cut to :data:`OUTBOX_ERROR_CHARS`."""
    text = error.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")
    return text[:OUTBOX_ERROR_CHARS]


JOB_PAGE_MAX = 500
"""``job_list`` answers at most this many jobs per page."""

QUEUE_STATS_ROWS = 100
"""``queue_stats`` counts finished jobs (completed, failed, cancelled) up to this many per job
name and state: a bounded read however much history the table keeps. Small on purpose: each
counted row is a heap read, and on PostgreSQL a larger bound lifts the statement's estimated
cost past ``jit_above_cost``, where JIT compilation costs more than the read itself."""

settle_logger = logging.getLogger("ultimat3_jobs.settle")

_write_now = contextvars.ContextVar("ultimat3_jobs_write_now", default=False)


@contextlib.contextmanager
def write_now() -> Iterator[None]:
    """Within this block an enqueue is written at once, even inside the caller's transaction
    (``publish="now"``): a driver that waits for the caller's commit asks :func:`writes_now`."""
    token = _write_now.set(True)
    try:
        yield
    finally:
        _write_now.reset(token)


def writes_now() -> bool:
    """Whether the current enqueue was asked to be written at once (see :func:`write_now`)."""
    return _write_now.get()


class WakeSubscription(Protocol):
    """A live subscription to enqueue wakes (see :meth:`JobDriver.wake_subscribe`)."""

    def is_live(self) -> bool:
        """Whether wakes are known to arrive now (proven since the last reconnect)."""

    def close(self) -> None:
        """Stop listening; no ``on_wake`` call follows."""


def check_claim_queues(queues: Sequence[str]) -> list[str]:
    """Refuse a claim that names no queue (:class:`JobClaimQueuesEmpty`); answer the queues
    as a de-duplicated list in the caller's order."""
    if isinstance(queues, str) or not queues:
        raise JobClaimQueuesEmpty(
            f"a claim must name at least one queue, as a list of names; got {queues!r}"
        )
    return list(dict.fromkeys(queues))


PAUSE_TARGET_MAX_LENGTH = 200


def check_pause(scope: str, target: str) -> None:
    if (
        scope not in PAUSE_SCOPES
        or not isinstance(target, str)
        or not 1 <= len(target) <= PAUSE_TARGET_MAX_LENGTH
    ):
        raise PauseInvalid(
            f"a pause needs scope in {PAUSE_SCOPES} and a target of 1 to "
            f"{PAUSE_TARGET_MAX_LENGTH} characters; "
            f"got scope={scope!r}, target={target!r:.80}"
        )


@dataclass(frozen=True, slots=True)
class JobListQuery:
    """The checked arguments of :meth:`JobDriver.job_list`: each filter ``None`` (any) or a
    de-duplicated list; ``search_id`` is ``search`` read as a job id, when it is one."""

    states: list[str] | None
    queues: list[str] | None
    names: list[str] | None
    tenant: str | None
    search: str | None
    search_id: uuid.UUID | None
    after: uuid.UUID | None
    limit: int


def _names_filter(option: str, values: Sequence[str] | None) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str) or not all(isinstance(value, str) for value in values):
        raise JobPageInvalid(f"{option} must be a list of strings; got {values!r}")
    return list(dict.fromkeys(values)) or None


def check_job_list(
    *,
    states: Sequence[str] | None,
    queues: Sequence[str] | None,
    names: Sequence[str] | None,
    tenant: str | None,
    search: str | None,
    after: uuid.UUID | str | None,
    limit: int,
) -> JobListQuery:
    """Refuse a list request that breaks a rule (:class:`JobPageInvalid`): a page size outside
    1..:data:`JOB_PAGE_MAX`, an unknown state, a cursor that is not a job id, a filter that is
    a bare string. An empty filter means any, like ``None``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= JOB_PAGE_MAX:
        raise JobPageInvalid(f"a page holds 1 to {JOB_PAGE_MAX} jobs; got limit={limit!r}")
    checked_states = _names_filter("states", states)
    known = {state.value for state in JobState}
    unknown = [state for state in checked_states or () if state not in known]
    if unknown:
        raise JobPageInvalid(f"states must be among {sorted(known)}; got {unknown!r}")
    if checked_states is not None:
        checked_states = [JobState(state).value for state in checked_states]
    if tenant is not None and not isinstance(tenant, str):
        raise JobPageInvalid(f"tenant must be a string; got {tenant!r}")
    if search is not None and not isinstance(search, str):
        raise JobPageInvalid(f"search must be a string; got {search!r}")
    search = search.strip() or None if search is not None else None
    search_id = None
    if search is not None:
        try:
            search_id = uuid.UUID(search)
        except ValueError:
            search_id = None
    if after is not None and not isinstance(after, uuid.UUID):
        try:
            after = uuid.UUID(str(after))
        except ValueError:
            raise JobPageInvalid(
                f"a cursor is the id of the last job of a page; got {after!r}"
            ) from None
    return JobListQuery(
        states=checked_states,
        queues=_names_filter("queues", queues),
        names=_names_filter("names", names),
        tenant=tenant,
        search=search,
        search_id=search_id,
        after=after,
        limit=limit,
    )


def cursor_gone(after: uuid.UUID) -> JobPageInvalid:
    return JobPageInvalid(
        f"the job at the cursor ({after}) is gone (removed, or dropped by its worker); "
        "list again from the first page"
    )


def check_counter_period(period: str) -> CounterPeriod:
    if period not in COUNTER_PERIODS:
        raise ValueError(f"a counter period is one of {COUNTER_PERIODS}; got {period!r}")
    return period


def log_unowned(operation: str, job_id: uuid.UUID, claim_token: uuid.UUID) -> None:
    settle_logger.info(
        "jobs.settle.unowned: %s of job %s did not land (no running attempt holds claim %s)",
        operation,
        job_id,
        claim_token,
        extra={"event": "jobs.settle.unowned", "job_id": str(job_id), "operation": operation},
    )


def log_unsettled(items: Sequence[SettleItem], landed: set[uuid.UUID]) -> None:
    """:func:`log_unowned` for each item of a ``job_settle_many`` that did not land, named as
    its single write would be (``ack``, ``nack (retry)``, ...)."""
    for item in items:
        if item.job_id not in landed:
            operation = "ack" if item.action == "complete" else f"nack ({item.action})"
            log_unowned(operation, item.job_id, item.claim_token)


def log_lost_beats(attempts: Sequence[tuple[uuid.UUID, uuid.UUID]], beat: Heartbeat) -> None:
    """Log ``jobs.settle.unowned`` for each attempt a heartbeat found lost (not busy)."""
    held = beat.held
    for job_id, token in attempts:
        if job_id not in held:
            log_unowned("heartbeat", job_id, token)


class JobDriver(abc.ABC):
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
    def job_get(self, *, job_id: uuid.UUID) -> JobRecord | None:
        """The job with that id, or ``None``."""

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
        """One page of jobs, newest first by ``(created_at, id)``, for an operator. Each filter
        is ``None`` (any) or matches exactly: ``states``, ``queues`` and ``names`` any of their
        values, ``tenant`` the tenant id, ``search`` a job id or an idempotency key.

        ``after`` is the ``next_cursor`` of the previous page: the id of its last job. The page
        continues below that job's own ``(created_at, id)``, read from its row, so a cursor
        carries no filter and no time of its own. Refused with
        :class:`~ultimat3_jobs.errors.JobPageInvalid`: ``limit`` outside 1 to
        :data:`JOB_PAGE_MAX`, an unknown state, and a cursor whose job is gone.

        Cost (PostgreSQL): a page with no filter, or filtered by state or name, walks
        ``x_jobs_newest`` in ``(created_at, id)`` order and stops after the page. No index
        covers the idempotency key alone or the tenant, so a ``search`` (which matches keys as
        well as ids) or a tenant filter reads the whole table: about a second for a million
        rows."""

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

    @abc.abstractmethod
    def job_progress(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, progress_json: str
    ) -> bool:
        """Store a running attempt's progress (JSON text), fenced. Answers whether it landed.
        The worker does not call it (its heartbeat and settle carry progress); it is for
        tools and tests."""

    @abc.abstractmethod
    def job_promote(self, *, job_id: uuid.UUID) -> bool:
        """Make a queued job that is due later due now (``run_at`` = now), and wake the
        workers of its queue. Answers whether it landed: ``False`` for a missing job, a job
        that is not queued, and a queued job already due (left as it is, so that its place in
        claim order does not move)."""

    @abc.abstractmethod
    def job_remove(self, *, job_id: uuid.UUID) -> bool:
        """Delete a job that is not running (queued or finished), with its history; counters
        do not move. Answers whether it landed: ``False`` for a missing job and for a running
        one, which must be cancelled first (the operator verb refuses it with
        :class:`~ultimat3_jobs.errors.JobNotRemovable`)."""

    @abc.abstractmethod
    def job_requeue(self, *, job_id: uuid.UUID) -> None:
        """Put a finished job (completed, failed, cancelled) back to ``queued``, due now, with
        its attempt count reset and its error history kept. Refuses with
        :class:`~ultimat3_jobs.errors.JobNotFound`,
        :class:`~ultimat3_jobs.errors.JobNotRequeueable` (queued or running) or
        :class:`~ultimat3_jobs.errors.JobDuplicate` (another live job holds its key)."""

    @abc.abstractmethod
    def job_requeue_failed(self, *, name: str, limit: int) -> BulkResult:
        """Put up to ``limit`` failed jobs of job name ``name`` back to ``queued`` in one write,
        oldest first, as :meth:`job_requeue` does (due now, attempts reset, errors kept), and
        wake the workers of their queues. Refuses none: a job whose idempotency key a live job
        holds is skipped, and of failed jobs sharing one key only the newest is requeued (two
        live jobs cannot share a key). Answers how many moved and how many failed jobs of that
        name remain (skipped ones, and those past ``limit``). ``limit <= 0`` moves nothing."""

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

    # -- queues and pauses ----------------------------------------------------------------

    @abc.abstractmethod
    def pause_add(
        self, *, scope: PauseScope, target: str, paused_by: str = "", reason: str = ""
    ) -> bool:
        """Pause a queue, a job name or a task. Answers whether it was not paused before."""

    @abc.abstractmethod
    def pause_list(self) -> list[Pause]:
        """Every pause, oldest first."""

    @abc.abstractmethod
    def pause_remove(self, *, scope: PauseScope, target: str) -> bool:
        """Lift a pause. Answers whether there was one."""

    @abc.abstractmethod
    def queue_demand(self, *, queues: Sequence[str]) -> dict[str, int]:
        """Per queue, how many jobs are ready to claim now, counted up to
        :data:`QUEUE_DEMAND_ROWS`; 0 for a paused queue."""

    @abc.abstractmethod
    def queue_stats(self, *, limit: int = QUEUE_STATS_ROWS) -> list[QueueStats]:
        """Per queue and state that holds a job, how many, in one read, by queue then state.
        ``queued`` and ``running`` are exact, and ``queued`` carries how long its oldest due
        job has waited. Finished states are counted up to ``limit`` rows per job name and
        state (``exact`` is then False); past the limit, which queue a job name's counted rows
        come from is the store's choice. Paused queues are counted like any other.

        Cost (PostgreSQL): live rows through the partial indexes ``x_jobs_claim`` (index only)
        and ``x_jobs_lease``: the backlog and the work in flight, not the history. Finished
        rows through ``x_jobs_name_state``: one seek per job name to find the names, then an
        ordered index scan that stops after ``limit`` rows per name and finished state. On a
        table of a million rows and 20 job names: about 20 ms. A very deep backlog (the
        queued count reads every queued index entry) can lift the estimated cost past
        ``jit_above_cost``; set ``jit = off`` for the role if JIT compilation shows up."""

    # -- counters ---------------------------------------------------------------------------

    @abc.abstractmethod
    def counter_read(
        self, *, since: datetime, period: CounterPeriod = "minute"
    ) -> list[CounterRow]:
        """The counter rows of ``period`` whose bucket starts at or after ``since`` truncated to
        the period (so the bucket holding ``since`` is included), by bucket then name."""

    @abc.abstractmethod
    def counter_rollup(self, *, keep_seconds: float) -> int:
        """Fold minute rows into hour rows, in one write: every minute row whose hour ended
        more than ``keep_seconds`` ago is added to its hour's row and deleted. Answers how many
        minute rows were folded. Safe to run from several processes at once: a row is folded
        by whichever write deletes it."""

    @abc.abstractmethod
    def counter_total(self) -> list[CounterTotal]:
        """Per job name, its counts summed over every bucket of both periods, by name: what
        has settled since the counters began. A bucket counts in one period only (a rollup
        that writes hour rows must delete the minute rows it folds, in the same write).

        Cost (PostgreSQL): reads the whole ``x_job_counters`` table, one row per job name and
        minute that settled something."""

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
        task: str,
        old_watermark: datetime,
        occurrence: datetime,
        dispatch: bool,
        request: EnqueueRequest,
        leader: str,
        holder: str,
        epoch: int,
    ) -> FireResult:
        """Deal with one occurrence in one write: move ``task``'s watermark from
        ``old_watermark`` to ``occurrence`` only while ``holder`` leads ``leader`` at
        ``epoch``, and, when ``dispatch``, insert ``request`` (due now) only where the
        watermark moved."""

    @abc.abstractmethod
    def scheduler_task_sync(self, *, names: Sequence[str]) -> dict[str, TaskState]:
        """The state of each named task; a task never seen before starts with its watermark
        at now, so it never replays its history."""

    # -- wake and the worker registry ------------------------------------------------------

    def wake_subscribe(self, *, on_wake: Callable[[str], None]) -> WakeSubscription | None:
        """Call ``on_wake(queue)`` (from another thread) when a job becomes due on ``queue``
        through an enqueue. ``None`` means this driver has no wake: the caller polls. The poll
        stays the guarantee either way; a wake only shortens the wait."""
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
    ) -> None:
        """Insert or renew a live worker's row in one write, expiring ``ttl_seconds`` from now,
        with its demand (ready jobs per queue, as :meth:`queue_demand` counts them; 0 for every
        queue while ``draining``)."""

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

    def queue_pause(self, *, queue: str, paused_by: str = "", reason: str = "") -> bool:
        """Pause a queue: its jobs stay queued until :meth:`queue_resume`."""
        return self.pause_add(scope="queue", target=queue, paused_by=paused_by, reason=reason)

    def queue_resume(self, *, queue: str) -> bool:
        """Resume a paused queue."""
        return self.pause_remove(scope="queue", target=queue)

    def reset_connection(self) -> None:  # noqa: B027 -- optional; a driver with no connection
        """Drop the calling thread's connection so the next call opens a fresh one (after a
        dropped connection, a database restart). Long-running loops call it after an error."""

    def close(self) -> None:  # noqa: B027 -- optional hook; most drivers hold nothing to close
        """Release what the driver holds (connections, threads)."""


def describe(driver: JobDriver) -> dict[str, Any]:
    """The capabilities of a driver, for logs and checks."""
    return {
        "name": driver.name,
        "database": driver.database,
        "enqueue_joins_transaction": driver.enqueue_joins_transaction,
    }


class OutboxStore(abc.ABC):
    """Where enqueues wait for their transaction to commit (``x_outbox`` in the caller's own
    database), and what the relay reads. Methods follow the driver's naming and rules; every
    store (``PostgresOutbox``, ``MemoryOutbox``) passes ``tests/drivers/test_outbox_seam.py``.
    Each staged row keeps its job's id, so a row published twice makes one job."""

    name: ClassVar[str] = "outbox"
    stage_visible_in_transaction: ClassVar[bool] = True
    """Whether a claim made inside the staging transaction, on its own connection, sees what it
    staged (PostgreSQL: a transaction sees its own rows). Other connections and threads see
    staged rows only after the commit, on every store."""

    database: str

    @classmethod
    def serves(cls, database: str) -> bool:
        """Whether this store can keep staged rows on the Django alias ``database``."""
        return True

    @abc.abstractmethod
    def outbox_stage_many(self, *, requests: Sequence[EnqueueRequest], notify: bool) -> None:
        """Stage jobs on the caller's connection, inside its transaction on :attr:`database`
        (at once when none is open), one write per :data:`ENQUEUE_CHUNK`: they are claimable
        once it commits, never after a rollback. ``run_at``, or the delay counted from the
        stage, is kept; ``notify`` wakes the relay at commit."""

    @abc.abstractmethod
    def outbox_claim(
        self, *, relay_id: str, limit: int, lease_seconds: float
    ) -> list[EnqueueRequest]:
        """Take up to ``limit`` unpublished rows, oldest staged first, under a lease: rows
        another relay holds are skipped; a row whose lease ended is taken again. A row already
        due comes back with no ``run_at`` (due at publish, which wakes the workers)."""

    @abc.abstractmethod
    def outbox_mark_published(self, *, relay_id: str, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """Mark rows published, fenced by ``relay_id`` (the row's last claimer). Answers the ids
        that were marked; a published row is never claimed again."""

    @abc.abstractmethod
    def outbox_record_failure(
        self, *, relay_id: str, job_id: uuid.UUID, error: str, retry_seconds: float
    ) -> bool:
        """Count a failed publish of one row, keep its error (as :func:`outbox_error_text`
        makes it), retry it after ``retry_seconds``. Fenced like
        :meth:`outbox_mark_published`."""

    @abc.abstractmethod
    def outbox_purge_published(self, *, retention_seconds: float, limit: int) -> int:
        """Delete up to ``limit`` rows published more than ``retention_seconds`` ago; never an
        unpublished row. Answers how many."""

    def wake_subscribe(self, *, on_wake: Callable[[str], None]) -> WakeSubscription | None:
        """Call ``on_wake`` when a staging transaction commits; None when there is no wake."""
        return None

    def reset_connection(self) -> None:  # noqa: B027 -- optional
        """Drop the calling thread's connection after an error."""

    def close(self) -> None:  # noqa: B027 -- optional
        """Release what the store holds."""
