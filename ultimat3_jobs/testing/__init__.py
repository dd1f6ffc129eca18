"""Test helpers for projects that use ultimat3-jobs (layer L5, the Django surface).

Plain functions, usable from any test runner::

    from ultimat3_jobs.testing import assert_enqueued, run_enqueued

    def test_signup_sends_welcome(client, mailoutbox):
        client.post("/signup/", {"email": "ada@example.com"})
        assert_enqueued(send_welcome, email="ada@example.com")
        summary = run_enqueued()
        assert summary.completed and not summary.errors
        assert len(mailoutbox) == 1

and, for pytest, the fixtures of :mod:`ultimat3_jobs.testing.pytest_plugin` (``jobs``,
``jobs_eager``), registered by the package's ``pytest11`` entry point.

The names load on first use, so importing this package (as pytest does with the plugin, before
Django is set up) touches neither settings nor the database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ultimat3_jobs.lazy import lazy_exports

if TYPE_CHECKING:
    from ultimat3_jobs.testing.clock import FiredCron, fire_cron, travel
    from ultimat3_jobs.testing.eager import EagerJobs, eager_jobs
    from ultimat3_jobs.testing.helper import Jobs
    from ultimat3_jobs.testing.queries import (
        EnqueuedJob,
        assert_enqueued,
        assert_not_enqueued,
        enqueued_jobs,
    )
    from ultimat3_jobs.testing.runner import RunSummary, run_enqueued

__all__ = [
    "EagerJobs",
    "EnqueuedJob",
    "FiredCron",
    "Jobs",
    "RunSummary",
    "assert_enqueued",
    "assert_not_enqueued",
    "eager_jobs",
    "enqueued_jobs",
    "fire_cron",
    "run_enqueued",
    "travel",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "EagerJobs": ".eager",
        "EnqueuedJob": ".queries",
        "FiredCron": ".clock",
        "Jobs": ".helper",
        "RunSummary": ".runner",
        "assert_enqueued": ".queries",
        "assert_not_enqueued": ".queries",
        "eager_jobs": ".eager",
        "enqueued_jobs": ".queries",
        "fire_cron": ".clock",
        "run_enqueued": ".runner",
        "travel": ".clock",
    },
)
