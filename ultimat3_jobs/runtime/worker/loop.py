"""``Worker``: the claim loop of one process.

One thread claims, in one statement over every queue, the free slots' worth of rows plus, once
bodies proved short, the next batch (``ahead.py``): a freed slot starts the next claimed attempt on
its thread. Bodies run in ``bodies.py``; the settler batches their endings, the maintenance thread
keeps their leases. A claim finding fewer than it asked (a shed: not found) backs off. Shutdown: a
first SIGTERM/SIGINT (``request_stop()``) stops claiming, gives back what was claimed ahead, lets
running attempts finish within the grace period, then releases the rest; a second skips the wait."""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from typing import Any

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.model.policy import rescue_policy
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.model.registry import registry as default_registry
from ultimat3_jobs.runtime.common.backoff import IdleBackoff
from ultimat3_jobs.runtime.common.pool import BodyPool, close_thread_connections
from ultimat3_jobs.runtime.common.store import STORE_ERRORS
from ultimat3_jobs.runtime.steps.writer import close_writer
from ultimat3_jobs.runtime.worker.ahead import ClaimAhead
from ultimat3_jobs.runtime.worker.attempt import Attempt, Outcome, attempts_for
from ultimat3_jobs.runtime.worker.bodies import Bodies
from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.runtime.worker.execute import JobTimedOut, failure
from ultimat3_jobs.runtime.worker.handoff import HandOffs, WorkerSide
from ultimat3_jobs.runtime.worker.held import HeldThreads
from ultimat3_jobs.runtime.worker.limits import WorkerLimits
from ultimat3_jobs.runtime.worker.maintenance import Maintenance, Tended
from ultimat3_jobs.runtime.worker.recycle import Recycle
from ultimat3_jobs.runtime.worker.release import release
from ultimat3_jobs.runtime.worker.settle import Settler, run_rescued_hook
from ultimat3_jobs.runtime.worker.wake import WorkerWake
from ultimat3_jobs.serialization import encode_json
from ultimat3_jobs.types import ClaimedJob

logger = logging.getLogger("ultimat3_jobs.worker")

EXIT_OK, EXIT_FORCED = 0, 1
STORE_RETRY_CEILING_SECONDS = 5.0


class Worker:
    """Runs ``config.queues``' jobs until stopped (with ``burst``: until none is due). Tests wait
    on its events ``started``, ``idle`` (a claim found too few), ``claimed``, ``stopped``."""

    def __init__(
        self, driver: JobDriver, config: WorkerConfig, *, registry: Registry | None = None
    ) -> None:
        self.driver = driver
        self.config = config
        self.registry = registry or default_registry
        self.started = threading.Event()
        self.idle = threading.Event()
        self.claimed = threading.Event()
        self.stopped = threading.Event()
        self.settled_count = 0
        self.started_count = 0
        self.claim_count = 0
        self.exit_reason = ""
        self._running: dict[int, Attempt] = {}  # by ``Attempt.running_key``
        self._slots_used = 0
        self._lock = threading.Lock()
        self._signal = threading.Event()
        self._accepting = True
        self._force = False
        self._recycle = Recycle(config)
        self._ahead = ClaimAhead(config.concurrency)
        self._backoff = IdleBackoff.of(config)
        self._bodies = Bodies(driver=driver, config=config, on_end=self._finished)
        self.held = HeldThreads(
            concurrency=config.concurrency, spare=config.concurrency, on_change=self._held_changed
        )
        self._hooks = BodyPool(1, name="jobs-hooks")
        self._settler = Settler(
            driver=driver,
            config=config,
            on_done=self._done,
            hooks=self._hooks,
            on_retry=self._retry_written,
            on_flushed=self._nudge,
        )
        self._limits = WorkerLimits(driver, self.registry, config, self._hooks, self._retry_written)
        hands = None if self._limits.limiter.active else self._take_handed
        self._wake = WorkerWake(driver, config, self._signal, self._backoff, hands)
        handoffs = HandOffs(  # hook: limits — a settle hands its slots on
            driver=driver,
            gate=self._limits.gate,
            ahead=self._ahead,
            worker=WorkerSide(
                reserve=self._reserve,
                start=self._start,
                wake=self._signal.set,
                find=self._running.get,
            ),
            lease_seconds=config.lease_seconds,
        )
        self._settler.hand_off(handoffs)
        tended = Tended(
            slots=self.held.usable_slots,
            running=self.running_attempts,
            on_timeout=self._abandon_timed_out,
            on_dead=partial(run_rescued_hook, self.registry, self._hooks),
            decide=rescue_policy(self.registry),
            is_draining=lambda: not self._accepting,
            limit_counts=self._limits.counts,  # hook: limits (start, claims, registry row)
        )
        self._maintenance = Maintenance(driver=driver, config=config, worker=tended)

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
    def threads_abandoned(self) -> int:  # held by bodies abandoned past their timeout
        return self.held.count

    @property
    def wake_live(self) -> bool:
        return self._wake.live

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> int:
        """Run until stopped; answers the process exit code."""
        self._settler.start()
        self._maintenance.start()
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
                self._signal.clear()  # before looking: a signal that comes while we look is kept
                self._start_waiting()
                looked = self._ahead.claiming.asks  # the asks made by now are what the plan sees
                want, queues, wait = self._limits.plan(  # hook: limits (the per-process limiter)
                    self.config.queues, self._claim_size(), self.running_attempts
                )
                looked_at = self._ahead.claiming.begin(want, looked)  # a flush may wait for it
                if looked_at is not None:  # else none planned: an ask the plan saw is declined
                    try:
                        jobs = self.driver.job_claim(
                            queues=queues,
                            limit=want,
                            worker_id=self.config.worker_id,
                            lease_seconds=self.config.lease_seconds,
                        )
                        store_wait = self.config.poll_floor
                    except STORE_ERRORS as exc:
                        logger.warning("jobs.worker.claim_failed: %s; retrying", exc)
                        self._ahead.claiming.end()
                        self.driver.reset_connection()
                        store_wait = min(store_wait * 2, STORE_RETRY_CEILING_SECONDS)
                        self._signal.wait(store_wait)
                        continue
                    self.claim_count += 1
                    self._limits.took(jobs)  # hook: limits (the limiter's rate)
                    gone = self._limits.gone()
                    self._ahead.add(self._track(jobs, since=looked_at))
                    self._start_waiting()
                    found = self._limits.found(len(jobs), gone)  # hook: limits; shed: not found
                    self._ahead.claiming.end(more=found >= want)  # given their slots
                    if jobs:
                        self.claimed.set()
                    if found:
                        self._backoff.reset()
                    if found < want:
                        if self.config.burst and not jobs and not self._running:
                            self.exit_reason = "burst: nothing is due"
                            break
                        self.idle.set()
                        wait = self._backoff.next(wake_live=self.wake_live, looked_at=looked_at)
                recycle = self._recycle.reason(settled=self.settled_count)
                if recycle is not None:
                    self.request_stop(reason=recycle)
                    break
                self._wake.subscribe()  # not for a burst that found none
                self._signal.wait(wait)  # busy: a freed slot signals; idle: backoff or a wake
        finally:
            code = self._shutdown()
        return code

    def _track(self, jobs: list[ClaimedJob], *, since: float) -> list[Attempt]:
        """Claimed jobs, leased since ``since``, as attempts the worker holds, waiting."""
        found = {"registry": self.registry, "driver": self.driver, "on_progress": self._progress}
        attempts = attempts_for(jobs, since=since, **found)
        with self._lock:
            self._running.update({attempt.running_key: attempt for attempt in attempts})
        return attempts

    def _claim_size(self, free: int | None = None) -> int:
        """``free`` (else the free slots) plus what claim-ahead wants; none if the settler lags."""
        free = (self._free_slots() if free is None else free) - self._ahead.parked()
        with self._lock:
            if self._ahead.behind(len(self._running)):
                return 0
        return self._ahead.wanted(free, self._limits.gate.holdings.ending)

    def _start_waiting(self, *, leases: bool = True) -> None:
        """Start claimed-ahead attempts in free slots, leases taken together (``leases=False``: by
        a body's thread freeing its slot, at most one needing a lease); the loop calls it too."""
        while self._accepting and (waiting := len(self._ahead)):
            room = self._reserve(waiting)  # their slots taken now; never past --max-jobs
            batch = self._ahead.take_many(room, limited=leases)
            if len(batch) < room:
                self._reserve(len(batch) - room)
            if not batch:
                return
            freed = self._limits.freed()
            verdicts = self._limits.start(batch)  # hook: limits — their leases, taken now
            if verdicts.count("run") == len(batch):  # none given back: another pass finds none
                for attempt in batch:  # (no zip: its strict keyword cost ~1,000 instructions)
                    self._start(attempt)
                return
            for attempt, verdict in zip(batch, verdicts, strict=True):
                if verdict == "run":
                    self._start(attempt)
                    continue
                self._reserve(-1)
                if verdict == "gone":  # shed, refused or failed by the gate: not ours now
                    with self._lock:
                        self._running.pop(attempt.running_key, None)
                    attempt.take_settle()
                else:
                    self._ahead.park(attempt)  # until one of this worker's own settles lands
            if "park" in verdicts and self._limits.freed() != freed:
                self._ahead.unpark()  # a settle of its key landed meanwhile: try again now

    def _reserve(self, wanted: int) -> int:
        """Up to ``wanted`` body slots taken for handed runs (``handoff.py``), or given back."""
        idle = self._bodies.pool.idle()
        with self._lock:
            if wanted > 0:
                free = max(0, min(wanted, self.config.concurrency - self._slots_used, idle))
                wanted = self._recycle.room(self.started_count, free) if self._accepting else 0
            self._slots_used += wanted
            self.started_count += wanted
        return wanted

    def _start(self, attempt: Attempt) -> None:
        attempt.holds_slot = True
        definition = attempt.definition
        if definition is not None and definition.timeout_seconds is not None:
            attempt.deadline = time.monotonic() + definition.timeout_seconds
            self._maintenance.kick()
        self._bodies.start(attempt)

    def _free_slots(self) -> int:
        """Slots free for a body now (an ack or a held thread holds none); a snapshot."""
        return max(0, min(self.config.concurrency - self._slots_used, self._bodies.pool.idle()))

    def _release_slot(self, attempt: Attempt, *, wake: bool = True) -> None:
        if not attempt.holds_slot:  # no lock: it guards the one True-to-False step only
            return
        with self._lock:
            if not attempt.holds_slot:
                return
            attempt.holds_slot = False
            self._slots_used -= 1
        if wake:
            self._signal.set()

    def _nudge(self) -> None:
        """Wake the loop only when its next pass has work, never once per ending (measured)."""
        if self._signal.is_set():  # already woken (about 4 nudges in 10): nothing to size
            return
        work = self._claim_size(free := self._free_slots()) > 0 or (free and len(self._ahead) > 0)
        if work or not self._accepting or self.config.max_jobs is not None:
            self._signal.set()

    def _finished(
        self, attempt: Attempt, outcome: Outcome | None, error: BaseException | None
    ) -> None:
        if error is not None:
            outcome = failure(attempt, error, worker_id=self.config.worker_id)
        assert outcome is not None
        if attempt.began_at is not None:
            self._ahead.body_took(time.monotonic() - attempt.began_at)
        settling = attempt.take_settle()  # else settled on its behalf (timed out, released)
        self.held.returned(attempt, settling=settling)
        self._limits.ended(attempt)  # hook: limits — its slots wait for its settle
        self._release_slot(attempt, wake=False)
        if settling:
            self._settler.put(Outcome(attempt, "lost") if attempt.lost else outcome)
        self._start_waiting(leases=False)
        self._nudge()  # after the next attempt took the slot: claim only when few wait

    def _done(self, attempt: Attempt, how: str) -> None:
        """The settler wrote (or skipped) this attempt's ending: forget it (no nudge here)."""
        if self._limits.done(attempt) and self._ahead.unpark():  # hook: limits; parked runs retry
            self._signal.set()
        if attempt.holds_slot:  # most: freed by its body's thread already (no call)
            self._release_slot(attempt)
        with self._lock:
            self._running.pop(attempt.running_key, None)
            self.settled_count += 1

    def _progress(self, attempt: Attempt, value: Any) -> None:
        """Progress for the next heartbeat (never the body's connection, whose row lock waits)."""
        if attempt.lost or attempt.settle_taken:
            return  # a cancelled attempt writes nothing more
        attempt.set_progress(encode_json(value, root="progress", max_depth=32, max_bytes=65536))
        self._maintenance.progress_pending()

    def _abandon_timed_out(self, attempt: Attempt) -> None:
        """Past its cancel's grace: fail the attempt now (its thread writes nothing more)."""
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

    def _retry_written(self, delay: float) -> None:  # the idle loop looks again when it is due
        self._backoff.due(time.monotonic() + delay)

    def _take_handed(self, job: ClaimedJob) -> bool:
        """A wake's job, claimed for this worker (``wake.py``): whether its body started now."""
        (attempt,) = self._track([job], since=time.monotonic())  # leased just before
        attempt.on_begin = self._signal.set
        self._ahead.add([attempt])
        self.claimed.set()
        self._start_waiting(leases=False)
        return attempt.holds_slot or attempt.body_started

    # -- shutdown -------------------------------------------------------------------------------

    def _shutdown(self) -> int:
        self._accepting = False
        self._wake.close()  # no claim follows: a wake or a hand for it alone goes elsewhere now
        released = self._release(self._ahead.drain())  # never started: back now, not after grace
        deadline = time.monotonic() + self.config.shutdown_grace
        while self._running and not self._force and time.monotonic() < deadline:
            self._signal.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            self._signal.clear()
        released += self._release(self.running_attempts())
        self._settler.stop(timeout=30)
        self._maintenance.stop()
        try:
            self.driver.worker_remove(worker_id=self.config.worker_id)
        except STORE_ERRORS as exc:
            logger.warning("jobs.worker.unregister_failed: %s", exc)
        stuck = self._bodies.shutdown(force=self._force)
        self._hooks.shutdown(timeout=0.5 if self._force else 5.0)
        close_writer(self.driver)  # hook: durable steps
        if stuck:
            logger.warning("jobs.worker.threads_left: %s still run abandoned bodies", stuck)
        close_thread_connections()
        logger.info(
            "jobs.worker.stopped: %s (%s); %s settled, %s released",
            self.config.worker_id,
            self.exit_reason or "stopped",
            self.settled_count,
            released,
        )
        self.stopped.set()
        return EXIT_FORCED if self._force else EXIT_OK

    def _release(self, attempts: list[Attempt]) -> int:
        """Give ``attempts`` back to ``queued`` now (see ``release.py``) and forget them."""
        taken, released = release(self.driver, attempts)
        with self._lock:
            for attempt in taken:
                self._running.pop(attempt.running_key, None)
        return released
