"""Deprecated path of the Django Tasks backend, kept so ``TASKS`` settings written as
``"ultimat3_jobs.tasks.JobsBackend"`` still load. Use ``ultimat3_jobs.contrib.django_tasks``."""

from __future__ import annotations

import warnings

from ultimat3_jobs.contrib.django_tasks.backend import JobsBackend, JobsTask, job_name

__all__ = ["JobsBackend", "JobsTask", "job_name"]

warnings.warn(
    "ultimat3_jobs.tasks is deprecated: set the TASKS BACKEND to "
    "'ultimat3_jobs.contrib.django_tasks.JobsBackend'",
    DeprecationWarning,
    stacklevel=2,
)
