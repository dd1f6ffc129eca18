"""The worker process: claims jobs, runs their bodies, settles them, keeps their leases.

Layer L4 (processes): imports L1-L3 and ``django.db.close_old_connections``; speaks to the store
only through the :class:`~ultimat3_jobs.drivers.base.JobDriver` it is handed. The management
command ``jobs_worker`` only parses options and calls :func:`run_worker` or the supervisor.
"""

from __future__ import annotations

from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.runtime.worker.loop import Worker

__all__ = ["Worker", "WorkerConfig"]
