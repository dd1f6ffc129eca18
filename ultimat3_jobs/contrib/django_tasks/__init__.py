"""Django's Tasks framework (``django.tasks``) on ultimat3-jobs: set
``TASKS = {"default": {"BACKEND": "ultimat3_jobs.contrib.django_tasks.JobsBackend"}}``."""

from __future__ import annotations

from ultimat3_jobs.contrib.django_tasks.backend import JobsBackend, JobsTask

__all__ = ["JobsBackend", "JobsTask"]
