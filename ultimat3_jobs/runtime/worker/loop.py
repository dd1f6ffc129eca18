"""``Worker``: the claim loop of one process.

One thread claims: as many rows as there are free slots, in one statement, over every queue.
Sync bodies run on a thread pool, ``async def`` bodies on one event loop thread; the settler
batches their endings and the maintenance thread keeps their leases. When a claim finds fewer
jobs than free slots the loop backs off (floor, doubling, ceiling); a wake, a freed slot after a
full claim, or a stop cuts the wait short.

Shutdown has two phases. The first (SIGTERM/SIGINT, ``request_stop()``) stops claiming and lets
running attempts finish within the grace period; what still runs after it is released back to
``queued`` at once, not after its lease. A second request skips the wait.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from concurrent.futures import Future
from functools import partial
from typing import Any

from ultimat3_jobs.drivers.base import JobDriver, WakeSubscription
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.policy import ENDINGS, rescue_policy
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.model.registry import registry as default_registry
from ultimat3_jobs.runtime.common.backoff import IdleBackoff
from ultimat3_jobs.runtime.common.pool import BodyPool, close_thread_connections
from ultimat3_jobs.runtime.common.store import STORE_ERRORS
from ultimat3_jobs.runtime.steps.attempt import bind_steps
from ultimat3_jobs.runtime.steps.writer import close_writer
from ultimat3_jobs.runtime.worker.attempt import Attempt, Outcome
from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.runtime.worker.execute import JobTimedOut, failure, run_async, run_sync
from ultimat3_jobs.runtime.worker.held import HeldThreads
from ultimat3_jobs.runtime.worker.limiter import ProcessLimiter
from ultimat3_jobs.runtime.worker.limits import LeaseGate, unenforceable
from ultimat3_jobs.runtime.worker.maintenance import Maintenance
from ultimat3_jobs.runtime.worker.recycle import Recycle
from ultimat3_jobs.runtime.worker.settle import Settler, run_settled_hook
from ultimat3_jobs.serialization import encode_json
from ultimat3_jobs.types import ClaimedJob, RescuedJob

logger = logging.getLogger("ultimat3_jobs.worker")

EXIT_OK = 0
EXIT_FORCED = 1
STORE_RETRY_CEILING_SECONDS = 5.0
PENDING_WRITE_WAIT_SECONDS = 5.0


class Worker:
    """Runs jobs from ``config.queues`` until stopped (or, with ``burst``, until none is due).

    Tests wait on its events instead of sleeping: ``started``, ``idle`` (a claim found less
    than it asked for), ``claimed`` (a claim took at least one job), ``stopped``.
    """

    def __init__(
        self,
        driver: JobDriver,
        config: WorkerConfig,
        *,
        registry: Registry | None = None,
    ) -> None:
        self.driver = driver
        self.config = config
        self.registry = registry or default_registry
        refused = unenforceable(driver, self.registry.definitions())  # hook: limits
        if refused is not None:
            raise refused
        self.started = threading.Event()
        self.idle = threading.Event()
        self.claimed = threading.Event()
        self.stopped = threading.Event()
        self.settled_count = 0
        self.claim_count = 0
        self.exit_reason = ""
        self._running: dict[uuid.UUID, Attempt] = {}
        self._slots_used = 0
        self._lock = threading.Lock()
        self._signal = threading.Event()
        self._accepting = True
        self._force = False
        self._wake_live = False
        self._wake: WakeSubscription | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._recycle = Recycle(config)
        self._backoff = IdleBackoff(
            floor=config.poll_floor,
            ceiling=config.poll_ceiling,
            ceiling_with_wake=config.poll_ceiling_wake,
        )
        # Spare threads beside the slots for bodies abandoned past their timeout, which keep a
        # thread until they return; past the spares, slots go unused (see HeldThreads).
        self._pool = BodyPool(config.concurrency * 2, name="jobs-body")
        self.held = HeldThreads(
            concurrency=config.concurrency,
            spare=config.concurrency,
            on_change=self._held_changed,
        )
        self._hooks = BodyPool(1, name="jobs-hooks")
        self._settler = Settler(
            driver=driver,
            config=config,
            on_done=self._done,
            hooks=self._hooks,
            on_retry=self._retry_written,
        )
        self._limiter = ProcessLimiter(config.limits)  # hook: limits — read before the claim
        # hook: limits — the leases a claimed run holds before its body starts
        self._gate = LeaseGate(
            driver=driver,
            worker_id=config.worker_id,
            hooks=self._hooks,
            on_shed=self._retry_written,
        )
        self._maintenance = Maintenance(
            driver=driver,
            config=config,
            slots=self.held.usable_slots,
            running=self.running_attempts,
            on_timeout=self._abandon_timed_out,
            on_dead=self._rescued_dead,
            decide=rescue_policy(self.registry),
            is_draining=lambda: not self._accepting,
        )

    # -- control -------------------------------------------------------------------------------

    def request_stop(self, *, reason: str = "stop requested") -> None:
        """First call: stop claiming and drain. Second call: stop waiting for the drain."""
        if not self._accepting:
            self._force = True
            logger.warning("jobs.worker.stop_now: second stop request; releasing what still runs")
        else:
            self._accepting = False
            self.exit_reason = reason
            logger.info("jobs.worker.draining: %s; no more claims", reason)
            self._maintenance.register_now()
        self._signal.set()

    def running_attempts(self) -> list[Attempt]:
        with self._lock:
            return list(self._running.values())

    @property
    def threads_abandoned(self) -> int:
        """Body threads held by bodies abandoned past their timeout."""
        return self.held.count

    @property
    def wake_live(self) -> bool:
        return self._wake is not None and self._wake.is_live()

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> int:
        """Run until stopped; answers the process exit code."""
        self._settler.start()
        self._maintenance.start()
        if self.config.use_wake:
            self._wake = self.driver.wake_subscribe(on_wake=self._on_wake)
        logger.info(
            "jobs.worker.started: %s on %s with %s slots",
            self.config.worker_id,
            ",".join(self.config.queues),
            self.config.concurrency,
        )
        self.started.set()
        store_wait = self.config.poll_floor
        try:
            while self._accepting:
                # Cleared before looking, so a signal that arrives while we look is kept.
                self._signal.clear()
                free = self._free_slots()
                wait: float | None = None
                queues = self.config.queues
                if self._limiter.active and free > 0:  # hook: limits — the per-process limiter
                    plan = self._limiter.plan(queues, free, self.running_attempts())
                    free, queues, wait = plan.limit, plan.queues, plan.retry_in
                if free > 0:
                    looked_at = time.monotonic()
                    try:
                        jobs = self.driver.job_claim(
                            queues=queues,
                            limit=free,
                            worker_id=self.config.worker_id,
                            lease_seconds=self.config.lease_seconds,
                        )
                        store_wait = self.config.poll_floor
                    except STORE_ERRORS as exc:
                        logger.warning("jobs.worker.claim_failed: %s; retrying", exc)
                        self.driver.reset_connection()
                        store_wait = min(store_wait * 2, STORE_RETRY_CEILING_SECONDS)
                        self._signal.wait(store_wait)
                        continue
                    self.claim_count += 1
                    self._limiter.took(len(jobs))  # hook: limits
                    admitted = 0
                    for job in jobs:
                        if self._admitted(job):  # hook: limits
                            self._start(job)
                            admitted += 1
                    if jobs:
                        self.claimed.set()
                        self._backoff.reset()
                    if len(jobs) < free:
                        if self.config.burst and not jobs and not self._running:
                            self.exit_reason = "burst: nothing is due"
                            break
                        self.idle.set()
                        wait = self._backoff.next(wake_live=self.wake_live, looked_at=looked_at)
                    elif admitted < free:
                        wait = 0.0  # hook: limits — shed runs left slots free: look again now
                    elif wait is None:
                        wait = self._limiter.retry_in()  # hook: limits — the rate's next token
                recycle = self._recycle.reason(settled=self.settled_count)
                if recycle is not None:
                    self.request_stop(reason=recycle)
                    break
                # Every slot busy: a freed slot signals; idle: the backoff, cut short by a wake.
                self._signal.wait(wait)
        finally:
            code = self._shutdown()
        return code

    def _admitted(self, job: ClaimedJob) -> bool:
        handle = self.registry.find(job.name)
        return self._gate.admit(job, handle.definition if handle is not None else None)

    def _start(self, job: ClaimedJob) -> None:
        handle = self.registry.find(job.name)
        definition = handle.definition if handle is not None else None
        ctx = JobContext(
            job_id=job.id,
            name=job.name,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            queue=job.queue,
            tenant_id=job.tenant_id,
            traceparent=job.traceparent,
        )
        attempt = Attempt(job=job, definition=definition, ctx=ctx)
        ctx._on_progress = lambda value, a=attempt: self._progress(a, value)
        is_async = definition is not None and definition.is_async  # hook: durable steps
        bind_steps(ctx, driver=self.driver, claim_token=job.claim_token, is_async=is_async)
        if definition is not None and definition.timeout_seconds is not None:
            attempt.deadline = attempt.started + definition.timeout_seconds
        with self._lock:
            self._running[job.id] = attempt
            self._slots_used += 1
        if attempt.deadline is not None:
            self._maintenance.kick()
        if definition is not None and definition.is_async:
            loop = self._event_loop()
            future = asyncio.run_coroutine_threadsafe(self._run_async(attempt), loop)
            future.add_done_callback(partial(self._finished, attempt))
        else:
            pooled = self._pool.submit(self._run_sync, attempt)
            pooled.add_done_callback(partial(self._finished, attempt))

    def _run_sync(self, attempt: Attempt) -> Outcome:
        if attempt.begin_body():
            self._clear_pending(attempt)
        return run_sync(attempt, self.config.worker_id)

    async def _run_async(self, attempt: Attempt) -> Outcome:
        if attempt.begin_body():
            await asyncio.to_thread(self._clear_pending, attempt, close=True)
        return await run_async(attempt, worker_id=self.config.worker_id)

    def _clear_pending(self, attempt: Attempt, *, close: bool = False) -> None:
        """A body recorded as waiting starts: clear the record first (one statement, only on
        this rare path), so that a body that kills its process still counts. ``close``: the
        calling thread is a loop's helper thread, which must not keep a connection open."""
        attempt.pending_written.wait(PENDING_WRITE_WAIT_SECONDS)
        try:
            self.driver.job_mark_pending_many(
                attempts=[(attempt.job.id, attempt.job.claim_token)], pending=False
            )
        except STORE_ERRORS as exc:
            logger.warning("jobs.worker.pending_clear_failed: %s %s", attempt.job.id, exc)
            self.driver.reset_connection()
        finally:
            if close:
                close_thread_connections()

    def _free_slots(self) -> int:
        """Slots whose body is not running and that a thread can run a body in now. Attempts
        waiting for their ack do not hold one, but once twice the slots' worth wait (the
        settler is behind), nothing more is claimed. Nothing is claimed that would wait for a
        thread with its lease running (threads held by abandoned bodies run none)."""
        with self._lock:
            if len(self._running) >= 2 * self.config.concurrency:
                return 0
            free = self.config.concurrency - self._slots_used
        return max(0, min(free, self._pool.idle()))

    def _release_slot(self, attempt: Attempt) -> None:
        with self._lock:
            if not attempt.holds_slot:
                return
            attempt.holds_slot = False
            self._slots_used -= 1
        self._signal.set()

    def _finished(self, attempt: Attempt, future: Future[Outcome]) -> None:
        try:
            outcome = future.result()
        except BaseException as exc:
            outcome = failure(attempt, exc, worker_id=self.config.worker_id)
        self.held.returned(attempt)
        if not attempt.holds_slot:
            self._signal.set()  # its thread is free again, though it held no slot any more
        self._release_slot(attempt)
        if not attempt.take_settle():
            return  # settled on its behalf already (timed out past grace, released)
        if attempt.lost:
            outcome = Outcome(attempt, "lost")
        self._settler.put(outcome)

    def _done(self, attempt: Attempt, how: str) -> None:
        """The settler wrote (or skipped) this attempt's ending: forget it."""
        self._gate.done(attempt)  # hook: limits — a run that never started abandons its slots
        self._release_slot(attempt)
        with self._lock:
            self._running.pop(attempt.job.id, None)
            self.settled_count += 1
        self._signal.set()

    def _progress(self, attempt: Attempt, value: Any) -> None:
        """Leave the body's progress on its attempt; the maintenance thread stores it with the
        next heartbeat, through its own connection. No database call here: written through the
        body's connection, inside a body's transaction, it would lock the job row until that
        commits, and every heartbeat of the worker would wait for it."""
        if attempt.lost or attempt.settle_taken:
            return  # a cancelled attempt writes nothing more
        attempt.set_progress(encode_json(value, root="progress", max_depth=32, max_bytes=65536))
        self._maintenance.progress_pending()

    def _abandon_timed_out(self, attempt: Attempt) -> None:
        """The attempt ignored its cancel past the grace period: fail it now; whatever its
        thread does later writes nothing."""
        if not attempt.take_settle():
            return
        logger.error(
            "jobs.timeout.abandoned: %s %s did not stop within the grace period",
            attempt.job.name,
            attempt.job.id,
        )
        message = f"job {attempt.job.name!r} ran past its timeout and did not stop"
        self.held.abandon(attempt)
        self._release_slot(attempt)  # its thread may never return; the slot is not its own now
        self._settler.put(failure(attempt, JobTimedOut(message), worker_id=self.config.worker_id))

    def _held_changed(self) -> None:
        self._maintenance.register_now()  # the registry row shows the slots left
        self._signal.set()

    def _retry_written(self, delay: float) -> None:
        """The settler wrote a retry due in ``delay`` s: the idle loop looks again by then."""
        self._backoff.due(time.monotonic() + delay)

    def _rescued_dead(self, job: RescuedJob) -> None:
        """A rescued attempt ended its job (failed for good or dropped): run ``on_settled``."""
        handle = self.registry.find(job.name)
        ending = ENDINGS[job.action]
        if handle is None or ending is None:
            return
        definition = handle.definition
        if definition.on_settled is not None:
            ctx = JobContext(job_id=job.id, name=job.name, attempt=job.attempt)
            self._hooks.submit(run_settled_hook, definition.on_settled, ctx, ending)

    def _on_wake(self, queue: str) -> None:
        if queue in self.config.queues:
            self._backoff.reset()
            self._signal.set()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="jobs-async", daemon=True)
            thread.start()
            self._loop, self._loop_thread = loop, thread
        return self._loop

    # -- shutdown -------------------------------------------------------------------------------

    def _shutdown(self) -> int:
        self._accepting = False
        deadline = time.monotonic() + self.config.shutdown_grace
        while self._running and not self._force and time.monotonic() < deadline:
            self._signal.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            self._signal.clear()
        released = self._release_running()
        self._settler.stop(timeout=30)
        self._maintenance.stop()
        if self._wake is not None:
            self._wake.close()
        try:
            self.driver.worker_remove(worker_id=self.config.worker_id)
        except STORE_ERRORS as exc:
            logger.warning("jobs.worker.unregister_failed: %s", exc)
        stuck = self._pool.shutdown(timeout=0.5 if self._force else 5.0)
        self._hooks.shutdown(timeout=0.5 if self._force else 5.0)
        close_writer(self.driver)  # hook: durable steps
        if stuck:
            logger.warning("jobs.worker.threads_left: %s still run abandoned bodies", stuck)
        close_thread_connections()
        if self._loop is not None and self._loop_thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop_thread.join(timeout=5)
            if not self._loop_thread.is_alive():
                self._loop.close()
        logger.info(
            "jobs.worker.stopped: %s (%s); %s settled, %s released",
            self.config.worker_id,
            self.exit_reason or "stopped",
            self.settled_count,
            released,
        )
        self.stopped.set()
        return EXIT_FORCED if self._force else EXIT_OK

    def _release_running(self) -> int:
        """Give every attempt still running back to ``queued`` now, its attempt not counted."""
        released = 0
        for attempt in self.running_attempts():
            if not attempt.take_settle():
                continue
            attempt.lose()
            try:
                if self.driver.job_nack(
                    job_id=attempt.job.id,
                    claim_token=attempt.job.claim_token,
                    action="retry",
                    counts_as_attempt=False,
                ):
                    released += 1
            except STORE_ERRORS as exc:
                logger.warning(
                    "jobs.worker.release_failed: %s stays leased until rescued (%s)",
                    attempt.job.id,
                    exc,
                )
            with self._lock:
                self._running.pop(attempt.job.id, None)
        return released
