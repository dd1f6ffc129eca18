"""One claimed attempt as the worker tracks it, and how it ended."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from ultimat3_jobs.drivers.base import JobDriver, LeaseRequest
from ultimat3_jobs.frozen import quick_init, quick_new
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.definitions import JobDefinition
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.model.tenancy import run_tenant
from ultimat3_jobs.runtime.steps.attempt import bind_steps
from ultimat3_jobs.runtime.worker.holdings import Slot
from ultimat3_jobs.types import AttemptError, ClaimedJob

OutcomeKind = Literal["completed", "failed", "lost", "suspended"]


@dataclass(slots=True, eq=False, weakref_slot=True)
class Attempt:
    """A running attempt. Several threads touch it (the body's, the settler, maintenance); the
    rules are :meth:`take_settle` (only the thread that wins it writes the settle) and
    :meth:`begin` (a body starts only while nothing has ended its attempt)."""

    job: ClaimedJob
    definition: JobDefinition | None
    ctx: JobContext
    started: float = field(default_factory=time.monotonic)
    deadline: float | None = None
    grace_deadline: float | None = None
    timed_out: bool = False
    lost: bool = False
    abandoned: bool = False
    """Settled without its body, which still holds its thread (past its timeout's grace)."""
    returned: bool = False
    """Its body returned (or never started): it holds no thread."""
    pending_progress: str | None = None
    """The body's last progress (JSON text) not stored yet: the heartbeat, or else the settle,
    stores it through the worker's own connection."""
    holds_slot: bool = True
    """Until its body returns (or is abandoned): a slot is free again before the ack lands."""
    body_started: bool = False
    """Set by :meth:`begin_body` as the body's thread picks it up (before :meth:`begin`
    decides whether it may run): from then on maintenance no longer marks it pending."""
    pending_marked: bool = False
    """Maintenance is recording (or has recorded) that the body waits to start."""
    pending_written: threading.Event | None = None
    """Set once that record is written; made by :meth:`mark_pending` (the rare path only)."""
    began_at: float | None = None
    """When the body started (``time.monotonic()``); None while it has not."""
    handoff_asked: LeaseRequest | Literal[False] | None = None
    """The one concurrency slot its run asks, for a hand-off (``handoff.py``); ``False``: it
    asks something else; ``None``: not worked out yet."""
    lease_from: float = 0.0
    """When its lease was last known taken or renewed (``time.monotonic()`` before the claim
    or the heartbeat that did it): the store's lease runs ``lease_seconds`` from a moment at
    or after this one."""
    riding: bool = False
    """It runs on a slot lent by a run whose body ended (``handoff.py``), and the store's row
    does not name it yet: the settle that records that run passes the row to it."""
    relayed: bool = False
    """It ran on a lent slot whose row a hand-off passed it without stamping its start: its
    settle stamps it started (``SettleItem.relayed``)."""
    lent: Slot[Attempt] | None = None
    """The slot it was lent, while it rides one: its ending lands only if that slot's row
    was there (``handoff.lent_by``)."""
    on_begin: Callable[[], object] | None = None
    """Called once, by :meth:`begin_body`: a hand's wake of the claim loop, put off until the
    handed body's thread runs, so that the loop's claim does not hold the interpreter (the GIL)
    while that thread waits for it to start the body."""
    running_key: int = field(init=False)
    """``job.id.int``, set by :func:`attempts_for`: the worker keeps its attempts by it (an
    ``int`` hashes in C, a ``UUID`` calls ``UUID.__hash__``)."""
    _settle_taken: bool = False
    _cancel_body: Callable[[], object] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, *, cancel: Callable[[], object] | None = None) -> bool:
        """Called by the thread about to run the body, just before it does: True to go ahead,
        False when the attempt already ended (settled, timed out, cancelled, lost) while it
        waited, so that a body never starts for an attempt whose ending is written or decided.
        ``cancel`` interrupts the body (an async body's task); timing out and losing the
        attempt call it."""
        with self._lock:
            return self._begin(cancel)

    def _begin(self, cancel: Callable[[], object] | None) -> bool:
        """:meth:`begin`'s decision, under the lock."""
        if self._settle_taken or self.lost or self.timed_out:
            return False
        self.began_at = time.monotonic()
        self._cancel_body = cancel
        return True

    @property
    def began(self) -> bool:
        return self.began_at is not None

    def take_settle(self) -> bool:
        """Claim the right to settle this attempt; True exactly once."""
        with self._lock:
            if self._settle_taken:
                return False
            self._settle_taken = True
            return True

    def mark_pending(self) -> bool:
        """Maintenance takes the right to record that the body has not started; False once
        it has started (or is marked already)."""
        with self._lock:
            if self.body_started or self.pending_marked:
                return False
            self.pending_marked = True
            self.pending_written = threading.Event()
            return True

    def begin_body(self, *, cancel: Callable[[], object] | None = None) -> bool | None:
        """The body is about to start. ``None`` when it was recorded as pending: the record
        must be cleared first (or a body that kills its process would not count), then
        :meth:`begin` decides; else :meth:`begin`'s answer, decided in the same lock round
        (most bodies: one round, not two)."""
        with self._lock:
            self.body_started = True
            then, self.on_begin = self.on_begin, None
            go = None if self.pending_marked else self._begin(cancel)
        if then is not None:
            then()
        return go

    def set_progress(self, text: str) -> None:
        with self._lock:
            self.pending_progress = text

    def take_progress(self) -> str | None:
        """The pending progress, now in the caller's hands (``None`` when there is none)."""
        if self.pending_progress is None:  # most attempts': no lock (a later set stays pending)
            return None
        with self._lock:
            text, self.pending_progress = self.pending_progress, None
            return text

    def untake_progress(self, text: str) -> None:
        """A taken progress that was not stored: pending again, unless a newer one came."""
        with self._lock:
            if self.pending_progress is None:
                self.pending_progress = text

    @property
    def settle_taken(self) -> bool:
        return self._settle_taken

    def time_out(self) -> None:
        """The deadline passed: tell the body to stop (and cancel it where that is possible)."""
        self._stop("timed_out")

    def lose(self) -> None:
        """The lease is gone (cancelled, rescued, settled elsewhere): stop and write nothing."""
        self._stop("lost")

    def _stop(self, why: Literal["timed_out", "lost"]) -> None:
        """Set the flag ``why`` under the lock, then tell the body to stop (and cancel it where
        that is possible)."""
        with self._lock:
            setattr(self, why, True)
            cancel = self._cancel_body
        self.ctx.cancelled.set()
        if cancel is not None:
            cancel()


@quick_init  # built once per job
@dataclass(frozen=True, slots=True)
class Outcome:
    """How an attempt's body ended. ``terminal`` failures are not retried; ``suspended``: a
    durable step gave the attempt back (``job_suspend`` landed), nothing more to write."""

    attempt: Attempt
    kind: OutcomeKind
    result_json: str = "null"
    error: AttemptError | None = None
    terminal: bool = False


new_outcome = quick_new(Outcome)
"""Builds an :class:`Outcome` as the class does, without its call (``frozen.py``): once per
job."""


def context_for(job: ClaimedJob, definition: JobDefinition | None) -> JobContext:
    """The context a claimed job's body (and its ``on_settled``) gets; its ``tenant_id`` is the
    run's tenant (:func:`~ultimat3_jobs.model.tenancy.run_tenant`: ``None`` for a job declared
    ``tenant="none"``, whoever enqueued it)."""
    return JobContext.for_claimed(job, tenant_id=run_tenant(definition, job.tenant_id))


def attempts_for(
    jobs: Iterable[ClaimedJob],
    *,
    registry: Registry,
    driver: JobDriver,
    on_progress: Callable[[Attempt, object], None],
    since: float = 0.0,
) -> list[Attempt]:
    """Claimed jobs as attempts, not started yet: each one's definition looked up (once per
    name of the batch), its context built with its step store bound (durable steps) and its
    progress reported to the worker."""
    definitions: dict[str, JobDefinition | None] = {}
    attempts: list[Attempt] = []
    for job in jobs:
        try:
            definition = definitions[job.name]
        except KeyError:
            handle = registry.find(job.name)
            definition = definitions[job.name] = handle.definition if handle else None
        ctx = context_for(job, definition)
        attempt = Attempt(job, definition, ctx)  # positional: no keywords matched per job
        attempt.holds_slot, attempt.lease_from = False, since
        attempt.running_key = job.id.int
        ctx._on_progress = partial(_report, weakref.ref(attempt), on_progress)
        is_async = definition is not None and definition.is_async
        bind_steps(ctx, driver=driver, claim_token=job.claim_token, is_async=is_async)
        attempts.append(attempt)
    return attempts


def _report(
    held: weakref.ref[Attempt], on_progress: Callable[[Attempt, object], None], value: object
) -> None:
    """The context's progress callback (bound in a ``partial``): ``on_progress(attempt,
    value)``, holding the attempt weakly. A strong reference would make a cycle (attempt, its
    context, the callback) that only the cycle collector frees: a dozen objects per job, and on
    short jobs the collector's passes over them cost a fifth of a worker's time."""
    attempt = held()
    if attempt is not None:
        on_progress(attempt, value)
