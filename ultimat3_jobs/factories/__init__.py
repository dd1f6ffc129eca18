"""Job factories: recurring data chores declared as durable jobs built on ``ctx.step``.

Layer: factories (imports core, the seam and the job model; the surface imports it).

* :func:`purge` — the one caller of every retention delete (:mod:`.purge`, targets in
  :mod:`.retention`).

Each factory answers a :class:`~ultimat3_jobs.model.definitions.JobHandle`.
"""

from __future__ import annotations

from ultimat3_jobs.factories.purge import PurgePlan, PurgeTarget, purge
from ultimat3_jobs.factories.retention import (
    default_targets,
    expired_events,
    finished_jobs,
    old_counters,
    published_outbox,
)

__all__ = [
    "PurgePlan",
    "PurgeTarget",
    "default_targets",
    "expired_events",
    "finished_jobs",
    "old_counters",
    "published_outbox",
    "purge",
]
