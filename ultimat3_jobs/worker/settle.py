"""The settler: one thread that writes how attempts ended, in batches.

Completed attempts are acked together in one statement per batch (flushed within
``ack_flush`` seconds of the first); failures are nacked one by one (retry, dead letter or drop,
as the job's declaration says). A settle that did not land (the attempt lost its lease) writes
nothing more and runs no hook. ``on_settled`` runs once, after a settle that landed, for an
ending: completed, dead-lettered or dropped; never for a retry.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from functools import partial

from ultimat3_jobs.context import JobContext
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.types import AckItem
from ultimat3_jobs.worker.attempt import Attempt, Outcome
from ultimat3_jobs.worker.config import WorkerConfig
from ultimat3_jobs.worker.policy import ENDINGS, Ending, after_failure
from ultimat3_jobs.worker.pool import BodyPool, close_thread_connections
from ultimat3_jobs.worker.store import STORE_ERRORS

logger = logging.getLogger("ultimat3_jobs.worker")

ACK_BATCH_MAX = 1000
RETRY_WRITE_SECONDS = 0.5


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
    ) -> None:
        super().__init__(name="jobs-settler", daemon=True)
        self._driver = driver
        self._config = config
        self._on_done = on_done
        self._on_retry = on_retry
        self._hooks = hooks
        self._queue: queue.SimpleQueue[Outcome | None] = queue.SimpleQueue()
        self._stopping = threading.Event()

    def put(self, outcome: Outcome) -> None:
        self._queue.put(outcome)

    def stop(self, timeout: float | None = None) -> None:
        """Settle what is queued, then stop."""
        self._stopping.set()
        self._queue.put(None)
        self.join(timeout)

    def run(self) -> None:
        try:
            while True:
                batch = self._gather()
                if batch:
                    self._settle(batch)
                elif self._stopping.is_set() and self._queue.empty():
                    return
        finally:
            close_thread_connections()

    def _gather(self) -> list[Outcome]:
        first = self._queue.get()
        if first is None:
            return []
        batch = [first]
        deadline = time.monotonic() + self._config.ack_flush
        while len(batch) < ACK_BATCH_MAX:
            try:
                remaining = deadline - time.monotonic()
                item = (
                    self._queue.get(timeout=remaining)
                    if remaining > 0
                    else (self._queue.get_nowait())
                )
            except queue.Empty:
                break
            if item is None:
                self._stopping.set()
                break
            batch.append(item)
        return batch

    def _settle(self, batch: list[Outcome]) -> None:
        acks = [o for o in batch if o.kind == "completed"]
        for outcome in batch:
            if outcome.kind == "lost":
                self._on_done(outcome.attempt, "lost")
        if acks:
            self._flush_progress([o.attempt for o in acks])
            landed = self._write(
                lambda: self._driver.job_ack_many(
                    items=[
                        AckItem(
                            job_id=o.attempt.job.id,
                            claim_token=o.attempt.job.claim_token,
                            result_json=o.result_json,
                        )
                        for o in acks
                    ]
                )
            )
            for outcome in acks:
                if outcome.attempt.job.id in landed:
                    self._ended(outcome.attempt, "completed")
                self._on_done(outcome.attempt, "completed")
        for outcome in batch:
            if outcome.kind == "failed":
                self._nack(outcome)

    def _nack(self, outcome: Outcome) -> None:
        attempt = outcome.attempt
        job = attempt.job
        decision = after_failure(
            attempt.definition,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            terminal=outcome.terminal,
        )
        action, delay, ending = decision.action, decision.delay_seconds, ENDINGS[decision.action]
        self._flush_progress([attempt])
        landed = self._write(
            lambda: self._driver.job_nack(
                job_id=job.id,
                claim_token=job.claim_token,
                action=action,
                delay_seconds=delay,
                error=outcome.error,
            )
        )
        if landed and ending is not None:
            self._ended(attempt, ending)
        if landed and action == "retry" and self._on_retry is not None:
            self._on_retry(delay)  # the claim loop looks again when the retry falls due
        self._on_done(attempt, action)

    def _flush_progress(self, attempts: list[Attempt]) -> None:
        for attempt in attempts:
            pending = attempt.pending_progress
            if pending is not None and not attempt.lost:
                attempt.pending_progress = None
                self._write(
                    partial(
                        self._driver.job_progress,
                        job_id=attempt.job.id,
                        claim_token=attempt.job.claim_token,
                        progress_json=pending,
                    )
                )

    def _ended(self, attempt: Attempt, ending: Ending) -> None:
        hook = attempt.definition.on_settled if attempt.definition else None
        if hook is not None:
            self._hooks.submit(run_settled_hook, hook, attempt.ctx, ending)

    def _write[T](self, write: Callable[[], T]) -> T:
        """Run one settle write, retrying while the database is unreachable: an outcome is
        never dropped because a connection was."""
        while True:
            try:
                return write()
            except STORE_ERRORS as exc:
                logger.warning("jobs.settle.retry: settle write failed (%s); retrying", exc)
                self._driver.reset_connection()
                time.sleep(RETRY_WRITE_SECONDS)


def run_settled_hook(hook: Callable[..., object], ctx: JobContext, ending: Ending) -> None:
    """Run ``on_settled(ctx, ending)``; its errors are logged, never rethrown."""
    try:
        hook(ctx, ending)
    except Exception:
        logger.exception(
            "jobs.settled.hook_failed: on_settled of %s (%s) raised", ctx.name, ctx.job_id
        )
