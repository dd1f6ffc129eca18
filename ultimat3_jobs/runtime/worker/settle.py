"""The settler: one thread that writes how attempts ended, in batches.

Every ending of a batch (flushed within ``ack_flush`` seconds of the first) is written in one
statement, ``job_settle_many``: completed attempts are acked, failures nacked (retry, dead letter
or drop, as the job's declaration says), the counters moved, each write fenced by its claim
token. Each settle also stores the attempt's last progress. A settle that did not land (the
attempt lost its lease) writes nothing more and runs no hook. ``on_settled`` runs once, after a
settle that landed, for an ending: completed, dead-lettered or dropped; never for a retry.

Only a lost connection is retried (until it is back): an outcome is never dropped because a
connection was. A write the database refuses (a value it cannot store, a constraint) is never
retried as it is: the batch is split in halves until the refused endings stand alone, the others
land once, and each refused ending is written once more with an ``ultimat3_jobs.SettleRefused``
error saying what was refused (a refused result fails its job; a refused nack keeps its action).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.frozen import quick_new
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.policy import ENDINGS, Ending, after_failure
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.model.tenancy import run_tenant, tenant_scope
from ultimat3_jobs.runtime.common.pool import BodyPool, close_thread_connections
from ultimat3_jobs.runtime.common.store import STORE_UNREACHABLE, refusal
from ultimat3_jobs.runtime.worker.attempt import Attempt, Outcome
from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.runtime.worker.execute import ERROR_MESSAGE_LIMIT, storable
from ultimat3_jobs.runtime.worker.handoff import HandOffs, Offer, lent_by
from ultimat3_jobs.runtime.worker.heldback import HeldBack
from ultimat3_jobs.types import AttemptError, RescuedJob, SettleItem

logger = logging.getLogger("ultimat3_jobs.worker")
_new_item = quick_new(SettleItem)

ACK_BATCH_MAX = 1000
RETRY_WRITE_SECONDS = 0.5
SETTLE_REFUSED = "ultimat3_jobs.SettleRefused"
LENDING = ("completed", "failed")
"""The endings whose slot is lent to the next run of its key at once (``handoff.py``); a lost
attempt's is not (its lease may be gone), nor a suspended one's (its step's write freed it)."""
WAKE = "wake"  # the marker that wakes the settler for the endings it holds back (heldback.py)


class Settler(threading.Thread):
    """Drains outcomes into settle statements; tells the worker when a slot is free."""

    def __init__(
        self,
        *,
        driver: JobDriver,
        config: WorkerConfig,
        on_done: Callable[[Attempt, str], None],
        hooks: BodyPool,
        on_retry: Callable[[float], None] | None = None,
        on_flushed: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(name="jobs-settler", daemon=True)
        self._driver = driver
        self._config = config
        self._on_done = on_done
        self._on_flushed = on_flushed
        """Called once after each flush's ``on_done`` calls: what follows the whole batch
        (the worker wakes its claim loop once per flush, not once per ending)."""
        self._on_retry = on_retry
        self._hooks = hooks
        self._worker_id = config.worker_id
        self._queue: queue.SimpleQueue[Outcome | str | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._full = threading.Event()
        """Ends the flush window early: a full batch waits, every held slot waits, or the stop
        came."""
        self.handoffs: HandOffs | None = None
        """Set by :meth:`hand_off`: each flush offers its runs' lease slots to waiting runs."""
        self._holding: set[int] = set()
        """Queued endings (by ``id``) whose runs held a slot of the worker's when put."""
        self._holding_lock = threading.Lock()
        self._held = HeldBack(partial(self._queue.put, WAKE))

    def hand_off(self, handoffs: HandOffs) -> None:
        """Offer each flush's lease slots through ``handoffs``; the endings a flush holds back
        for the claim after it (``heldback.py``) are woken as each claim lands."""
        self.handoffs = handoffs
        handoffs.claiming.on_land = self._held.landed

    def put(self, outcome: Outcome) -> None:
        handoffs = self.handoffs
        if handoffs is not None and handoffs.none_held():
            handoffs = None  # no run holds a lease slot (no limited job): none to lend or hold
        lent = handoffs is not None and outcome.kind in LENDING and handoffs.lend(outcome.attempt)
        self._queue.put(outcome)  # lent before its settle can be gathered, which passes it
        if handoffs is not None and not lent and handoffs.holds(outcome.attempt):
            with self._holding_lock:
                self._holding.add(id(outcome))
                holding = len(self._holding)
            if handoffs.all_in(holding):  # nothing more can join: runs wait for these slots
                self._full.set()
        if self._queue.qsize() >= ACK_BATCH_MAX:
            self._full.set()

    def stop(self, timeout: float | None = None) -> None:
        """Settle what is queued, then stop."""
        self._stopping.set()
        self._queue.put(None)
        self._full.set()
        self.join(timeout)

    def run(self) -> None:
        try:
            # Checked before every wait on the queue: the stop's marker may have been taken
            # by a batch (behind endings queued before it), and a blocking wait after that
            # would never end.
            while not (self._stopping.is_set() and self._queue.empty() and not self._held):
                batch = self._gather()
                if batch:
                    self._settle(batch)
                    if self._on_flushed is not None:
                        self._on_flushed()
        finally:
            close_thread_connections()

    def _gather(self) -> list[Outcome]:
        """The endings of one flush: the first (waited for), then what else came within
        ``ack_flush`` of it, up to ``ACK_BATCH_MAX``. The thread sleeps through the window
        instead of waking for each ending (a wake per ending cost more CPU than its share of
        the statement); a full batch, the stop, or a batch that holds every lease slot the
        worker holds while runs wait for them (``handoff.py``) ends the window at once. A batch
        that would free slots nobody was lent waits for the claim on its way (``handoff.py``);
        the endings that came meanwhile on such slots wait for the next (``heldback.py``)."""
        try:
            first = self._queue.get(timeout=self._held.timeout())
        except queue.Empty:
            first = WAKE
        handoffs = self.handoffs
        released = self._held.due(handoffs.claiming, self._stopping.is_set()) if handoffs else []
        if not isinstance(first, Outcome):
            return released  # the stop, or held endings' time (none: nothing yet)
        if self._queue.qsize() + 1 < ACK_BATCH_MAX and not self._stopping.is_set():
            self._full.wait(self._config.ack_flush)
        self._full.clear()  # a batch still full after this one is seen by the size check
        batch = self._more([first])
        stopping = self._stopping.is_set()
        back: list[Outcome] = []
        if handoffs and not stopping and handoffs.await_claim([o.attempt for o in batch]):
            for outcome in self._more([]):  # came meanwhile: on a slot nobody runs on, it waits
                (back if handoffs.holds(outcome.attempt) else batch).append(outcome)
            self._held.hold(back, handoffs.claiming)
        if self._holding:
            with self._holding_lock:
                self._holding.difference_update(id(outcome) for outcome in batch + back)
        return released + batch

    def _more(self, batch: list[Outcome]) -> list[Outcome]:
        """``batch`` and what else is queued now, up to ``ACK_BATCH_MAX``."""
        while len(batch) < ACK_BATCH_MAX:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._stopping.set()
                break
            if isinstance(item, Outcome):  # not a wake marker
                batch.append(item)
        return batch

    def _settle(self, batch: list[Outcome]) -> None:
        """Write every ending of ``batch`` in one statement; isolate what the store refuses."""
        endings: list[tuple[Outcome, SettleItem]] = []
        for outcome in batch:
            if outcome.kind in ("lost", "suspended"):  # suspended: written by its step
                self._on_done(outcome.attempt, outcome.kind)
            else:
                endings.append((outcome, self._item(outcome)))
        if not endings:
            return
        handoffs = self.handoffs
        settling = [outcome.attempt for outcome, _ in endings]
        offer = handoffs.offer(settling) if handoffs else Offer()
        granted: set[uuid.UUID] = set()
        landed, refused = self._write_many(endings, offer, granted)
        every = len(landed) == len(endings)  # each landed: no id is hashed per ending
        # The riders of a refused run's row wait for its ending written again, which passes it.
        waiting = {o.attempt for o, item in endings if refused and item.job_id in refused}
        if handoffs and offer.attempts:
            handoffs.handed(settling, offer.without(waiting), granted)  # before they are done
        for outcome, item in endings:
            if refused and item.job_id in refused:
                continue
            self._landed(outcome.attempt, item, every or item.job_id in landed)
        for outcome, item in endings:
            exc = refused.get(item.job_id) if refused else None
            if exc is not None:
                self._settle_refused(outcome, item, exc, offer.part({outcome.attempt}))

    def _item(self, outcome: Outcome, error: AttemptError | None = None) -> SettleItem:
        """The write of one ending: an ack, or the nack the job's failure policy decides."""
        attempt = outcome.attempt
        job = attempt.job
        progress = None if attempt.pending_progress is None else attempt.take_progress()
        relayed = attempt.riding or attempt.relayed
        lent = lent_by(attempt) if attempt.riding else None  # only a riding run's slot was lent
        if outcome.kind == "completed":
            return _new_item(  # a ``SettleItem``, without the class's call (``frozen.py``)
                job_id=job.id,
                claim_token=job.claim_token,
                action="complete",
                result_json=outcome.result_json,
                progress_json=progress,
                relayed=relayed,
                lent_by=lent,
            )
        decision = after_failure(
            attempt.definition,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            terminal=outcome.terminal,
        )
        return SettleItem(
            job_id=job.id,
            claim_token=job.claim_token,
            action=decision.action,
            progress_json=progress,
            error=error or outcome.error,
            delay_seconds=decision.delay_seconds,
            relayed=relayed,
            lent_by=lent,
        )

    def _landed(self, attempt: Attempt, item: SettleItem, landed: bool) -> None:
        """The write of ``item`` is done: run what follows a landed ending, free the attempt."""
        how = "completed" if item.action == "complete" else item.action
        ending = "completed" if item.action == "complete" else ENDINGS[item.action]
        hook = attempt.definition.on_settled if attempt.definition else None
        if landed and ending is not None and hook is not None:
            self._hooks.submit(run_settled_hook, hook, attempt.ctx, ending)
        if landed and item.action == "retry" and self._on_retry is not None:
            self._on_retry(item.delay_seconds)  # the claim loop looks again when it falls due
        self._on_done(attempt, how)

    def _write_many(
        self,
        endings: list[tuple[Outcome, SettleItem]],
        offer: Offer | None = None,
        granted: set[uuid.UUID] | None = None,
    ) -> tuple[set[uuid.UUID], dict[uuid.UUID, Exception]]:
        """Write ``endings`` in one statement, handing their slots to ``offer``'s runs (the
        runs granted go in ``granted``). A batch the database refuses is split in halves until
        each refused ending stands alone, each half passing its own rows to their riders (the
        waiting runs are offered none): answers the ids that landed and, per refused id, the
        error. Every write of the split writes disjoint rows, so nothing lands twice."""
        items = [item for _, item in endings]
        try:
            if offer is not None and offer.written and self.handoffs is not None:
                runs = self.handoffs.runs(offer.attempts)
                write = partial(self._driver.job_settle_handoff, items=items, runs=runs)
                handoff = self._write(write)
                offer.found(handoff.held)
                if granted is not None:
                    granted.update(handoff.granted)
                return handoff.landed, {}
            return self._write(partial(self._driver.job_settle_many, items=items)), {}
        except Exception as exc:
            if len(endings) == 1:
                outcome, item = endings[0]
                logger.error(
                    "jobs.settle.refused: the database refused the %s of %s %s: %s",
                    "result" if item.action == "complete" else item.action,
                    outcome.attempt.job.name,
                    item.job_id,
                    refusal(exc),
                )
                return set(), {item.job_id: exc}
        half = len(endings) // 2
        landed, refused = self._write_many(endings[:half], _part(offer, endings[:half]), granted)
        more_landed, more_refused = self._write_many(
            endings[half:], _part(offer, endings[half:]), granted
        )
        return landed | more_landed, refused | more_refused

    def _settle_refused(
        self, outcome: Outcome, item: SettleItem, exc: Exception, offer: Offer
    ) -> None:
        """One ending the database refused, written again once with a ``SettleRefused`` error
        in place of what it refused (and without its progress): a refused result fails the job
        for good (stored again, the same result would be refused again); a refused nack keeps
        its action. Refused again, the attempt is left to the rescuer (its lease runs out):
        never a loop. The write passes the run's row to the run riding it (``offer``)."""
        attempt = outcome.attempt
        if item.action == "complete":
            error = _refused_error(attempt, exc, self._worker_id, what="result")
            again = self._item(Outcome(attempt, "failed", error=error, terminal=True))
        else:
            error = _refused_error(
                attempt, exc, self._worker_id, what="error entry", kept=outcome.error
            )
            again = replace(item, error=error, progress_json=None)
        granted: set[uuid.UUID] = set()
        try:
            landed = bool(self._write_one(again, offer, granted))
        except Exception as second:
            logger.error(
                "jobs.settle.refused: %s %s could not be settled (%s); its lease will run out "
                "and the rescuer takes it back",
                attempt.job.name,
                attempt.job.id,
                refusal(second),
            )
            landed = False
        if self.handoffs is not None and offer.riders:
            self.handoffs.handed([attempt], offer, granted)
        self._landed(attempt, again, landed)

    def _write_one(self, item: SettleItem, offer: Offer, granted: set[uuid.UUID]) -> set[uuid.UUID]:
        """Write one ending, passing its row to the run riding it, if any."""
        if self.handoffs is None or not (offer.riders or offer.lent):
            return self._write(partial(self._driver.job_settle_many, items=[item]))
        runs = self.handoffs.runs(offer.riders)
        handoff = self._write(partial(self._driver.job_settle_handoff, items=[item], runs=runs))
        offer.found(handoff.held)
        granted.update(handoff.granted)
        return handoff.landed

    def _write[T](self, write: Callable[[], T]) -> T:
        """Run one settle write, retrying while the database is unreachable: an outcome is
        never dropped because a connection was. Any other error (the database refused what
        was written) is raised to the caller at once, never retried as it is."""
        while True:
            try:
                return write()
            except STORE_UNREACHABLE as exc:
                logger.warning("jobs.settle.retry: settle write failed (%s); retrying", exc)
                self._driver.reset_connection()
                time.sleep(RETRY_WRITE_SECONDS)


def _part(offer: Offer | None, endings: list[tuple[Outcome, SettleItem]]) -> Offer | None:
    """The riders of the rows that ``endings``' runs hold, alone."""
    if offer is None or not (offer.riders or offer.lent):
        return None
    return offer.part({o.attempt for o, _ in endings})


def run_settled_hook(hook: Callable[..., object], ctx: JobContext, ending: Ending) -> None:
    """Run ``on_settled(ctx, ending)`` in the job's tenant scope, up to ``ON_SETTLED_ATTEMPTS``
    times until it returns; each error is logged, none rethrown."""
    tries = get_settings().on_settled_attempts
    for attempt in range(1, tries + 1):
        try:
            with tenant_scope(ctx.tenant_id):  # the body's scope: TENANT_CONTEXT entered
                hook(ctx, ending)
            return
        except Exception:
            logger.exception(
                "jobs.settled.hook_failed: on_settled of %s (%s) raised (try %s of %s)",
                ctx.name,
                ctx.job_id,
                attempt,
                tries,
            )


def run_rescued_hook(registry: Registry, hooks: BodyPool, job: RescuedJob) -> None:
    """A rescued attempt ended its job (failed for good or dropped): run ``on_settled`` on
    ``hooks``, in the scope its body had."""
    handle = registry.find(job.name)
    ending = ENDINGS[job.action]
    if handle is None or ending is None or handle.definition.on_settled is None:
        return
    tenant_id = run_tenant(handle.definition, job.tenant_id)
    ctx = JobContext(job_id=job.id, name=job.name, attempt=job.attempt, tenant_id=tenant_id)
    hooks.submit(run_settled_hook, handle.definition.on_settled, ctx, ending)


def _refused_error(
    attempt: Attempt, exc: Exception, worker_id: str, *, what: str, kept: AttemptError | None = None
) -> AttemptError:
    """The error entry of an attempt whose ``what`` the database refused to store; what can be
    kept of the attempt's own error (made storable) follows in the message and traceback."""
    message = f"the database refused to store this attempt's {what}: {refusal(exc)}"
    if kept is not None:
        message += f"; the attempt failed with {kept.error_class}: {kept.message}"
    return AttemptError(
        attempt=attempt.job.attempt,
        error_class=SETTLE_REFUSED,
        message=storable(message)[:ERROR_MESSAGE_LIMIT],
        traceback=storable(kept.traceback) if kept is not None else "",
        worker_id=worker_id,
    )
