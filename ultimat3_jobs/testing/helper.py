"""``Jobs``: the helpers as one object, what the ``jobs`` pytest fixture answers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.testing.clock import FiredCron, fire_cron, travel
from ultimat3_jobs.testing.eager import EagerJobs, eager_jobs
from ultimat3_jobs.testing.queries import (
    EnqueuedJob,
    JobRef,
    assert_enqueued,
    assert_not_enqueued,
    enqueued_jobs,
)
from ultimat3_jobs.testing.runner import RUN_LIMIT_DEFAULT, RunSummary, run_enqueued


class Jobs:
    """Every helper of :mod:`ultimat3_jobs.testing`, bound to one driver (by default the
    configured one, looked up at each call)."""

    def __init__(self, driver: JobDriver | None = None) -> None:
        self.driver = driver

    def enqueued(self, job: JobRef | None = None) -> list[EnqueuedJob]:
        """See :func:`~ultimat3_jobs.testing.enqueued_jobs`."""
        return enqueued_jobs(job, driver=self.driver)

    def assert_enqueued(
        self, job: JobRef, /, *, options: Mapping[str, Any] | None = None, **input_subset: Any
    ) -> EnqueuedJob:
        """See :func:`~ultimat3_jobs.testing.assert_enqueued`."""
        return assert_enqueued(job, options=options, driver=self.driver, **input_subset)

    def assert_not_enqueued(
        self, job: JobRef, /, *, options: Mapping[str, Any] | None = None, **input_subset: Any
    ) -> None:
        """See :func:`~ultimat3_jobs.testing.assert_not_enqueued`."""
        assert_not_enqueued(job, options=options, driver=self.driver, **input_subset)

    def run(self, queue: str | None = None, *, limit: int = RUN_LIMIT_DEFAULT) -> RunSummary:
        """See :func:`~ultimat3_jobs.testing.run_enqueued`."""
        return run_enqueued(queue, limit=limit, driver=self.driver)

    def travel(self, by: float | timedelta) -> list[uuid.UUID]:
        """See :func:`~ultimat3_jobs.testing.travel`."""
        return travel(by, driver=self.driver)

    def fire_cron(
        self, at: datetime, *, job: JobRef | None = None, since: datetime | None = None
    ) -> list[FiredCron]:
        """See :func:`~ultimat3_jobs.testing.fire_cron`."""
        return fire_cron(at, job=job, since=since, driver=self.driver)

    @contextmanager
    def eager(self) -> Iterator[EagerJobs]:
        """See :func:`~ultimat3_jobs.testing.eager_jobs`."""
        with eager_jobs(driver=self.driver) as eager:
            yield eager
