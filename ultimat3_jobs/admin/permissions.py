"""Who may do what in the admin: one permission per operator verb, checked on the server.

Layer: surface. The permissions are declared on :class:`~ultimat3_jobs.models.Job`
(``Meta.permissions``); the admin only asks the user for them.
"""

from __future__ import annotations

from typing import Any

VIEW_JOB = "ultimat3_jobs.view_job"
"""Django's own view permission on jobs: the changelist, a job's page, the pages of queues."""
VIEW_JOB_INPUT = "ultimat3_jobs.view_job_input"
"""See a job's input, progress and result without redaction."""
CANCEL_JOB = "ultimat3_jobs.cancel_job"
REQUEUE_JOB = "ultimat3_jobs.requeue_job"
PROMOTE_JOB = "ultimat3_jobs.promote_job"
REMOVE_JOB = "ultimat3_jobs.remove_job"
PAUSE_QUEUE = "ultimat3_jobs.pause_queue"
"""Pause and resume queues, job names and tasks."""


def has(user: Any, permission: str) -> bool:
    """Whether ``user`` (an active staff member, as the admin requires) holds ``permission``."""
    return bool(user.is_active and user.is_staff and user.has_perm(permission))


def can_watch(user: Any) -> bool:
    """Whether ``user`` may see the queues page and the dashboard: anyone who may see jobs or
    pause queues."""
    return has(user, VIEW_JOB) or has(user, PAUSE_QUEUE)


def author(user: Any) -> str:
    """Who a pause made in the admin is recorded as: ``admin:<user name>`` (the CLI writes
    ``cli:<user name>``)."""
    return f"admin:{user.get_username()}"
