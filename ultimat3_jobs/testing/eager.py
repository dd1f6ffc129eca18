"""Eager jobs: each enqueue runs its job (through :func:`run_enqueued`) once the transaction
around it commits, or at once outside a transaction, as ``transaction.on_commit`` would.

A test wrapped in a transaction (pytest-django's default ``django_db``, Django's
``TestCase``) never commits, so ``on_commit`` callbacks never run there. Eager mode treats the
test's own transaction as absent: an enqueue outside any transaction of the code under test runs
at once, and one inside ``transaction.atomic()`` runs when that block's outermost level exits
without error (the moment it would commit), and never when it rolls back. In a test with
``transaction=True`` the real commit runs it.

The switch wraps the configured driver's ``job_enqueue`` and ``job_enqueue_many`` for the
duration of the block; a driver built afterwards (after ``override_settings`` of
``ULTIMAT3_JOBS``) is not wrapped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.testing.runner import RunSummary, run_enqueued
from ultimat3_jobs.types import EnqueueRequest, EnqueueResult

logger = logging.getLogger("ultimat3_jobs.testing")


def in_code_transaction(connection: BaseDatabaseWrapper) -> bool:
    """Whether the code under test has a transaction open on ``connection``: an atomic block
    other than the ones a test case wraps every test in."""
    return connection.in_atomic_block and not all(
        getattr(block, "_from_testcase", False) for block in connection.atomic_blocks
    )


class _Deferred:
    """One enqueue's run, waiting for the code's transaction to commit."""

    def __init__(self, eager: EagerJobs, queues: list[str]) -> None:
        self.eager = eager
        self.queues = queues

    def __call__(self) -> None:
        if self in self.eager.pending:
            self.eager.pending.remove(self)
        self.eager.run(self.queues)


class EagerJobs:
    """What :func:`eager_jobs` answers: ``runs`` holds one summary per eager run."""

    def __init__(self, driver: JobDriver, database: str) -> None:
        self.driver = driver
        self.database = database
        self.runs: list[RunSummary] = []
        self._wanted: set[str] = set()
        self.pending: list[_Deferred] = []
        self._running = False

    def enqueued(
        self, requests: Sequence[EnqueueRequest], results: Sequence[EnqueueResult]
    ) -> None:
        """Run the new jobs' queues now, or when the code's transaction commits."""
        queues = sorted(
            {req.queue for req, res in zip(requests, results, strict=True) if res.created}
        )
        if not queues:
            return
        connection = transaction.get_connection(self.database)
        if not in_code_transaction(connection):
            self.run(queues)
            return
        deferred = _Deferred(self, queues)
        self.pending.append(deferred)
        transaction.on_commit(deferred, using=self.database)

    def run(self, queues: Sequence[str]) -> None:
        """Drain ``queues``. A job enqueued by a body while a drain runs joins that drain."""
        self._wanted.update(queues)
        if self._running:
            return
        self._running = True
        try:
            while self._wanted:
                queue = min(self._wanted)
                self._wanted.discard(queue)
                self.runs.append(run_enqueued(queue, driver=self.driver))
        finally:
            self._running = False

    def watch(self, execute: Any, sql: Any, params: Any, many: bool, context: Any) -> Any:
        """An execute wrapper: the release of a savepoint that closes the code's outermost
        atomic block inside a test transaction is the moment it would have committed."""
        result = execute(sql, params, many, context)
        if (
            self.pending
            and isinstance(sql, str)
            and sql.startswith("RELEASE SAVEPOINT")
            and not in_code_transaction(context["connection"])
        ):
            self._release(context["connection"])
        return result

    def _release(self, connection: BaseDatabaseWrapper) -> None:
        """The code's outermost block would commit here: run every ``on_commit`` callback it
        left, in order, as a commit would (the test's own transaction stands for autocommit).
        That includes other callbacks than ours, such as the memory driver's hold of a job
        enqueued in the block, which must be written before its queue runs. A rolled-back
        savepoint took its callbacks out of ``run_on_commit``: those never run."""
        pending, self.pending = self.pending, []
        ours = {id(deferred): deferred for deferred in pending}
        entries, connection.run_on_commit = connection.run_on_commit, []
        for _sids, func, robust in entries:
            deferred = ours.get(id(func))
            if deferred is not None:
                self.run(deferred.queues)
            elif robust:
                try:
                    func()
                except Exception:
                    logger.exception("jobs.testing.on_commit_failed: %r raised", func)
            else:
                func()


@contextmanager
def eager_jobs(*, driver: JobDriver | None = None) -> Iterator[EagerJobs]:
    """Within the block, each enqueue runs its job right after the transaction around it
    commits (see the module's notes for tests that run inside a transaction). Jobs due later
    (a delay, a retry's backoff) are not run: :func:`~ultimat3_jobs.testing.travel` and
    :func:`~ultimat3_jobs.testing.run_enqueued` reach them."""
    driver = driver or get_driver()
    database = driver.database or get_settings().database
    eager = EagerJobs(driver, database)
    one, many = driver.job_enqueue, driver.job_enqueue_many

    def job_enqueue(*, request: EnqueueRequest) -> EnqueueResult:
        result = one(request=request)
        eager.enqueued([request], [result])
        return result

    def job_enqueue_many(*, requests: Sequence[EnqueueRequest]) -> list[EnqueueResult]:
        results = many(requests=requests)
        eager.enqueued(requests, results)
        return results

    with ExitStack() as stack:
        stack.enter_context(transaction.get_connection(database).execute_wrapper(eager.watch))
        driver.job_enqueue = job_enqueue  # type: ignore[method-assign]  # undone below
        driver.job_enqueue_many = job_enqueue_many  # type: ignore[method-assign]
        try:
            yield eager
        finally:
            del driver.job_enqueue
            del driver.job_enqueue_many
