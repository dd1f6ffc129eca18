"""The maintenance thread: leases, progress, run deadlines, the worker's registry row, the
rescuer.

One thread, one timer wheel: each duty has a next-due time and the thread sleeps until the
earliest. While the worker is idle it touches the store only for the registry row and the
rescue sweep.

The heartbeat is also how progress reaches the store: bodies only leave their last progress on
their attempt, and each beat writes it, through this thread's own connection, in the same fenced
statement that renews the leases. A body's transaction never holds a row this thread needs, and
a row locked by anyone is skipped for one beat rather than waited for (it stays held): one
waiting heartbeat would stop every lease of the worker.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.runtime.common.pool import close_thread_connections
from ultimat3_jobs.runtime.common.store import STORE_ERRORS, STORE_UNREACHABLE, refusal
from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.types import ExpiredAttempt, FailureDecision, Heartbeat, RescuedJob

logger = logging.getLogger("ultimat3_jobs.worker")

COUNTER_ROLLUP_INTERVAL_SECONDS = 600.0
COUNTER_KEEP_MINUTES_SECONDS = 7200.0
"""Minute counters are folded into hours every ten minutes once their hour ended two hours
ago, so the dashboard's last hour is always in minutes."""
PENDING_MARK_AFTER_SECONDS = 0.5
"""A claimed body not started this long after its claim waits for a thread: it is marked."""
RESCUE_WORDS = {"retry": "queued again", "fail": "failed", "drop": "dropped"}


BUSY_RETRY_FRACTION = 0.25
"""A beat that found rows locked tries them again after this fraction of the interval."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tended:
    """The worker as its maintenance thread sees it: ``running``, its attempts (their leases
    renewed, their deadlines watched); ``on_dead`` and ``decide``, what a job rescued dead calls
    and the rescue policy of an expired attempt; ``on_timeout``, called for an attempt past its
    deadline's grace; ``is_draining``, ``slots`` (its usable body slots, else its concurrency)
    and ``limit_counts``, what its registry row says."""

    running: Callable[[], list[Attempt]]
    on_dead: Callable[[RescuedJob], None]
    decide: Callable[[ExpiredAttempt], FailureDecision]
    on_timeout: Callable[[Attempt], None]
    is_draining: Callable[[], bool]
    slots: Callable[[], int] | None = None
    limit_counts: Callable[[], dict[str, dict[str, int]]] | None = None


class Maintenance(threading.Thread):
    """Renews leases of running attempts and stores their progress (one statement per interval
    for all of them), cancels attempts at their deadline and abandons them after the grace
    period, keeps the worker's registry row, and returns expired attempts of any worker to the
    queue."""

    def __init__(self, *, driver: JobDriver, config: WorkerConfig, worker: Tended) -> None:
        super().__init__(name="jobs-maintenance", daemon=True)
        self._driver = driver
        self._config = config
        self._worker = worker
        self._stopping = threading.Event()
        self._kick = threading.Event()
        now = time.monotonic()
        self._next_heartbeat = now + config.heartbeat_interval
        self._next_registry = now
        self._next_rescue = now + min(config.rescue_interval, 1.0)
        self._next_rollup = now + COUNTER_ROLLUP_INTERVAL_SECONDS
        self._last_beat = now
        self._progress_due: float | None = None
        self._busy: set[uuid.UUID] = set()
        self.rescued = 0

    def stop(self) -> None:
        self._stopping.set()
        self._kick.set()
        self.join(timeout=10)

    def kick(self) -> None:
        """Look at deadlines now (a new attempt with a deadline started)."""
        self._kick.set()

    def progress_pending(self) -> None:
        """A body left progress on its attempt: the next beat stores it. With a
        ``progress_interval`` shorter than the heartbeat's, beat that much sooner."""
        interval = self._config.progress_interval
        if interval >= self._config.heartbeat_interval or self._progress_due is not None:
            return
        self._progress_due = self._last_beat + interval
        self._kick.set()

    def register_now(self) -> None:
        """Rewrite the registry row now (the worker started draining: its demand drops to 0)."""
        self._next_registry = 0.0
        self._kick.set()

    def run(self) -> None:
        try:
            self._loop()
        finally:
            close_thread_connections()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            now = time.monotonic()
            try:
                if now >= self._beat_at():
                    self._next_heartbeat = now + self._config.heartbeat_interval
                    self._last_beat, self._progress_due = now, None
                    self.heartbeat()
                    self.mark_pending()
                if now >= self._next_registry:
                    self._next_registry = now + self._config.registry_interval
                    self.register()
                if now >= self._next_rescue:
                    self._next_rescue = now + self._config.rescue_interval
                    self.rescue()
                if now >= self._next_rollup:
                    self._next_rollup = now + COUNTER_ROLLUP_INTERVAL_SECONDS
                    self._driver.counter_rollup(keep_seconds=COUNTER_KEEP_MINUTES_SECONDS)
            except STORE_ERRORS as exc:
                logger.warning("jobs.worker.maintenance_failed: %s", exc)
                self._driver.reset_connection()
            next_deadline = self._check_deadlines(time.monotonic())
            wake_at = min(
                self._beat_at(), self._next_registry, self._next_rescue, self._next_rollup
            )
            if next_deadline is not None:
                wake_at = min(wake_at, next_deadline)
            self._kick.wait(max(0.0, wake_at - time.monotonic()))
            self._kick.clear()

    def _beat_at(self) -> float:
        due = self._progress_due
        return self._next_heartbeat if due is None else min(self._next_heartbeat, due)

    def heartbeat(self) -> None:
        """Renew every lease this worker holds and store the progress its bodies left. An
        attempt whose settle is taken but not written yet (waiting in the settler) is renewed
        too: it is not lost until its ack or nack lands."""
        attempts = [a for a in self._worker.running() if not a.lost]
        if not attempts:
            return
        progress: dict[uuid.UUID, str] = {}
        for attempt in attempts:
            text = None if attempt.settle_taken else attempt.take_progress()
            if text is not None:
                progress[attempt.job.id] = text
        began = time.monotonic()
        try:
            beat = self._beat(attempts, progress)
        except BaseException:
            self._untake(attempts, progress, stored=frozenset())
            raise
        self._untake(attempts, progress, stored=beat.renewed)
        for attempt in attempts:  # the store's lease runs from a moment after ``began``
            if attempt.job.id in beat.renewed:
                attempt.lease_from = began
        self._note_busy(attempts, beat)
        for attempt in attempts:
            if attempt.job.id not in beat.held and not attempt.settle_taken:
                logger.warning(
                    "jobs.worker.lease_lost: %s %s (attempt %s) lost its lease; stopping it",
                    attempt.job.name,
                    attempt.job.id,
                    attempt.job.attempt,
                )
                attempt.lose()

    def _beat(self, attempts: list[Attempt], progress: dict[uuid.UUID, str]) -> Heartbeat:
        pairs = [(a.job.id, a.job.claim_token) for a in attempts]
        lease = self._config.lease_seconds
        try:
            return self._driver.job_heartbeat_many(
                attempts=pairs, lease_seconds=lease, progress=progress
            )
        except STORE_UNREACHABLE:
            raise
        except Exception as exc:
            if not progress:
                raise
            # The store refused a progress value: the leases matter more than the progress.
            logger.error("jobs.progress.refused: progress not stored (%s)", refusal(exc))
            progress.clear()
            return self._driver.job_heartbeat_many(attempts=pairs, lease_seconds=lease)

    @staticmethod
    def _untake(
        attempts: list[Attempt], progress: dict[uuid.UUID, str], *, stored: frozenset[uuid.UUID]
    ) -> None:
        """Progress a beat took but did not store is pending again (unless a newer came)."""
        for attempt in attempts:
            text = progress.get(attempt.job.id)
            if text is not None and attempt.job.id not in stored:
                attempt.untake_progress(text)

    def _note_busy(self, attempts: list[Attempt], beat: Heartbeat) -> None:
        """Rows locked by another transaction were skipped: say so once per attempt, and try
        them again sooner than the next interval."""
        for attempt in attempts:
            if attempt.job.id in beat.busy and attempt.job.id not in self._busy:
                logger.warning(
                    "jobs.worker.heartbeat_busy: %s %s is locked by another transaction (the "
                    "body's own?); its lease and progress wait for a later beat",
                    attempt.job.name,
                    attempt.job.id,
                )
        self._busy = set(beat.busy)
        if beat.busy:
            retry = time.monotonic() + self._config.heartbeat_interval * BUSY_RETRY_FRACTION
            self._next_heartbeat = min(self._next_heartbeat, retry)

    def register(self) -> None:
        worker = self._worker
        self._driver.worker_heartbeat(
            worker_id=self._config.worker_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            queues=list(self._config.queues),
            slots=self._config.concurrency if worker.slots is None else worker.slots(),
            ttl_seconds=max(self._config.lease_seconds, self._config.registry_interval * 3),
            draining=worker.is_draining(),
            limits=None if worker.limit_counts is None else worker.limit_counts(),
        )

    def rescue(self) -> None:
        """Take back expired attempts of any worker; what follows each is the job's own
        failure policy (``worker.policy``), the same one the settler applies."""
        for job in self._driver.job_rescue_expired(decide=self._worker.decide):
            self.rescued += 1
            logger.warning(
                "jobs.rescue: %s %s had an expired lease; %s (attempt count now %s)",
                job.name,
                job.id,
                RESCUE_WORDS[job.action],
                job.attempt,
            )
            if job.action != "retry":
                logger.error(
                    "jobs.dead_letter: %s %s spent its attempts (%s)", job.name, job.id, job.action
                )
                self._worker.on_dead(job)

    def mark_pending(self) -> None:
        """Record attempts whose body still waits for a thread (rare: the pool is held), so
        that the rescue of a lost worker does not count them. A body clears its own mark
        before it starts."""
        now = time.monotonic()
        waiting = [
            a
            for a in self._worker.running()
            if now - a.started >= PENDING_MARK_AFTER_SECONDS
            and not a.lost
            and not a.settle_taken
            and a.mark_pending()
        ]
        if not waiting:
            return
        try:
            self._driver.job_mark_pending_many(
                attempts=[(a.job.id, a.job.claim_token) for a in waiting], pending=True
            )
        finally:
            for attempt in waiting:
                if attempt.pending_written is not None:
                    attempt.pending_written.set()

    def _check_deadlines(self, now: float) -> float | None:
        upcoming: float | None = None
        for attempt in self._worker.running():
            if attempt.settle_taken or attempt.lost:
                continue
            if attempt.deadline is not None and not attempt.timed_out:
                if now >= attempt.deadline:
                    attempt.time_out()  # sets ctx.cancelled; cancels an async body's task
                    attempt.grace_deadline = now + self._config.timeout_grace
                    logger.warning(
                        "jobs.timeout: %s %s ran past its timeout; cancelling it",
                        attempt.job.name,
                        attempt.job.id,
                    )
                else:
                    upcoming = (
                        attempt.deadline if upcoming is None else min(upcoming, attempt.deadline)
                    )
            if attempt.timed_out and attempt.grace_deadline is not None:
                if now >= attempt.grace_deadline:
                    attempt.grace_deadline = None
                    self._worker.on_timeout(attempt)
                else:
                    upcoming = (
                        attempt.grace_deadline
                        if upcoming is None
                        else min(upcoming, attempt.grace_deadline)
                    )
        return upcoming
