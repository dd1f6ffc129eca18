"""The scheduler: fires crons, once per occurrence, from whichever process leads.

Layer L4 (processes): speaks only to the :class:`~ultimat3_jobs.drivers.base.JobDriver` it is
handed.
"""

from __future__ import annotations

from ultimat3_jobs.runtime.scheduler.scheduler import Scheduler, SchedulerConfig

__all__ = ["Scheduler", "SchedulerConfig"]
