"""ultimat3-jobs: durable background jobs for Django, on PostgreSQL, with no broker to run.

The public API::

    from ultimat3_jobs import job, Retry, Terminal

    @job(queue="emails", tenant="none", retry=Retry(attempts=5))
    def send_welcome(ctx, *, user_id: int) -> None: ...

    send_welcome.enqueue(user_id=42)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ultimat3_jobs.errors import LeaseExpired, Terminal
from ultimat3_jobs.lazy import lazy_exports
from ultimat3_jobs.types import EnqueueResult, JobState

if TYPE_CHECKING:
    from ultimat3_jobs.model.context import JobContext
    from ultimat3_jobs.model.definitions import JobHandle, Retry, cron, job, task
    from ultimat3_jobs.model.enqueue import enqueue_by_name as enqueue
    from ultimat3_jobs.model.events import send_event
    from ultimat3_jobs.model.limits import Concurrency, Rate

__all__ = [
    "Concurrency",
    "EnqueueResult",
    "JobContext",
    "JobHandle",
    "JobState",
    "LeaseExpired",
    "Rate",
    "Retry",
    "Terminal",
    "cron",
    "enqueue",
    "job",
    "send_event",
    "task",
]

# The job model reads Django settings; loading it lazily keeps `import ultimat3_jobs` safe before
# settings are configured (INSTALLED_APPS imports the package early).
__getattr__ = lazy_exports(
    __name__,
    {
        "job": "ultimat3_jobs.model.definitions",
        "cron": "ultimat3_jobs.model.definitions",
        # Deprecated alias of cron: importing it is silent, calling it warns.
        "task": "ultimat3_jobs.model.definitions",
        "Retry": "ultimat3_jobs.model.definitions",
        "Concurrency": "ultimat3_jobs.model.limits",
        "Rate": "ultimat3_jobs.model.limits",
        "JobHandle": "ultimat3_jobs.model.definitions",
        "JobContext": "ultimat3_jobs.model.context",
        "enqueue": "ultimat3_jobs.model.enqueue:enqueue_by_name",
        "send_event": "ultimat3_jobs.model.events",
    },
)
