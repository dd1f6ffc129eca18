"""``Bodies``: where attempts' bodies run. Sync bodies run on a pool of threads, ``async def``
bodies on one event loop thread (started on first use); a body recorded as waiting for a thread
clears that record before it starts."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.runtime.common.pool import BodyPool, close_thread_connections
from ultimat3_jobs.runtime.common.store import STORE_ERRORS
from ultimat3_jobs.runtime.worker.attempt import Attempt, Outcome
from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.runtime.worker.execute import run_async, run_sync, task_cancel

logger = logging.getLogger("ultimat3_jobs.worker")

PENDING_WRITE_WAIT_SECONDS = 5.0

Ended = Callable[[Attempt, Outcome | None, BaseException | None], None]
"""How a body ended: its attempt, its outcome or the exception that escaped it."""


class Bodies:
    """Runs bodies and reports each ending to ``on_end`` (on the thread the body ran on, or
    the event loop's)."""

    def __init__(self, *, driver: JobDriver, config: WorkerConfig, on_end: Ended) -> None:
        self._driver = driver
        self._worker_id = config.worker_id
        self._on_end = on_end
        # Spare threads beside the slots for bodies abandoned past their timeout, which keep a
        # thread until they return; past the spares, slots go unused (see HeldThreads).
        self.pool = BodyPool(config.concurrency * 2, name="jobs-body")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None

    def start(self, attempt: Attempt) -> None:
        definition = attempt.definition
        if definition is not None and definition.is_async:
            future = asyncio.run_coroutine_threadsafe(self._run_async(attempt), self._event_loop())
            future.add_done_callback(lambda done: self._async_ended(attempt, done))
        else:
            # A partial, not a lambda: its call adds no Python frame per job.
            self.pool.call(self._run_sync, attempt, done=partial(self._on_end, attempt))

    def _async_ended(self, attempt: Attempt, future: Future[Outcome]) -> None:
        try:
            outcome, error = future.result(), None
        except BaseException as exc:
            outcome, error = None, exc
        self._on_end(attempt, outcome, error)

    def _run_sync(self, attempt: Attempt) -> Outcome:
        begun = attempt.begin_body()
        if begun is None:
            self._clear_pending(attempt)
            begun = attempt.begin()
        return run_sync(attempt, self._worker_id, begun)

    async def _run_async(self, attempt: Attempt) -> Outcome:
        cancel = task_cancel()
        begun = attempt.begin_body(cancel=cancel)
        if begun is None:
            await asyncio.to_thread(self._clear_pending, attempt, close=True)
            begun = attempt.begin(cancel=cancel)
        return await run_async(attempt, worker_id=self._worker_id, begun=begun)

    def _clear_pending(self, attempt: Attempt, *, close: bool = False) -> None:
        """A body recorded as waiting starts: clear the record first (one statement, only on
        this rare path), so that a body that kills its process still counts. ``close``: the
        calling thread is a loop's helper thread, which must not keep a connection open."""
        if attempt.pending_written is not None:
            attempt.pending_written.wait(PENDING_WRITE_WAIT_SECONDS)
        try:
            self._driver.job_mark_pending_many(
                attempts=[(attempt.job.id, attempt.job.claim_token)], pending=False
            )
        except STORE_ERRORS as exc:
            logger.warning("jobs.worker.pending_clear_failed: %s %s", attempt.job.id, exc)
            self._driver.reset_connection()
        finally:
            if close:
                close_thread_connections()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="jobs-async", daemon=True)
            thread.start()
            self._loop, self._loop_thread = loop, thread
        return self._loop

    def shutdown(self, *, force: bool) -> list[str]:
        """Stop the pool and the event loop; answers the names of threads still running
        abandoned bodies."""
        stuck = self.pool.shutdown(timeout=0.5 if force else 5.0)
        if self._loop is not None and self._loop_thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop_thread.join(timeout=5)
            if not self._loop_thread.is_alive():
                self._loop.close()
        return stuck
