"""The modules the admin's pages and actions use, each imported on its first use (a page view,
an action) rather than when Django's admin autodiscovery imports ``ultimat3_jobs.admin``. Every
process of a project with the admin installed runs that autodiscovery, a worker's too; it needs
the ModelAdmins registered, not the pages' views nor the operator verbs behind them.

Use as ``deferred.verbs.cancel_many(...)``: the attribute is read when the code runs, never at
import (``from ultimat3_jobs.admin.deferred import verbs`` would import it at once).

Layer: surface.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ultimat3_jobs.lazy import lazy_modules

if TYPE_CHECKING:
    from ultimat3_jobs.admin import backfills, cancel, dashboard, job_page, queues
    from ultimat3_jobs.consumers import declare as consumers
    from ultimat3_jobs.consumers import loop as consumer_loop
    from ultimat3_jobs.operator import introspection, redaction, verbs
    from ultimat3_jobs.subjects import requests as subject_requests

__all__ = [
    "backfills",
    "cancel",
    "consumer_loop",
    "consumers",
    "dashboard",
    "introspection",
    "job_page",
    "queues",
    "redaction",
    "subject_requests",
    "verbs",
]

__getattr__ = lazy_modules(
    __name__,
    {
        "backfills": "ultimat3_jobs.admin.backfills",
        "cancel": "ultimat3_jobs.admin.cancel",
        "consumer_loop": "ultimat3_jobs.consumers.loop",
        "consumers": "ultimat3_jobs.consumers.declare",
        "dashboard": "ultimat3_jobs.admin.dashboard",
        "introspection": "ultimat3_jobs.operator.introspection",
        "job_page": "ultimat3_jobs.admin.job_page",
        "queues": "ultimat3_jobs.admin.queues",
        "redaction": "ultimat3_jobs.operator.redaction",
        "subject_requests": "ultimat3_jobs.subjects.requests",
        "verbs": "ultimat3_jobs.operator.verbs",
    },
)
