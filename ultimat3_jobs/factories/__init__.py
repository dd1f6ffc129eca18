"""Job factories: recurring data chores declared as durable jobs built on ``ctx.step``.

Layer: factories (imports core, the seam and the job model; the surface imports it).

* :func:`purge` — the one caller of every retention delete (:mod:`.purge`, targets in
  :mod:`.retention`);
* :func:`backfill` — a table swept in resumable batches, recorded in ``x_backfills``
  (:mod:`.backfill`, sources in :mod:`.sources`); :func:`inspect_backfills` is the registry
  against the ledger (:mod:`.inspect`);
* :func:`rollup`, :func:`refresh_view` — one upsert, or one materialized-view refresh, per run
  (:mod:`.rollup`);
* :func:`export_rows`, :func:`import_rows` — rows out to and in from files through Django's
  storage API, one step per page (:mod:`.rows`).

Each factory answers a :class:`~ultimat3_jobs.model.definitions.JobHandle`.
"""

from __future__ import annotations

from ultimat3_jobs.factories.backfill import backfill
from ultimat3_jobs.factories.inspect import BackfillView, inspect_backfills
from ultimat3_jobs.factories.purge import PurgePlan, PurgeTarget, purge
from ultimat3_jobs.factories.retention import (
    default_targets,
    expired_events,
    finished_jobs,
    old_counters,
    published_outbox,
)
from ultimat3_jobs.factories.rollup import refresh_view, rollup
from ultimat3_jobs.factories.rows import export_rows, import_rows

__all__ = [
    "BackfillView",
    "PurgePlan",
    "PurgeTarget",
    "backfill",
    "default_targets",
    "expired_events",
    "export_rows",
    "finished_jobs",
    "import_rows",
    "inspect_backfills",
    "old_counters",
    "published_outbox",
    "purge",
    "refresh_view",
    "rollup",
]
