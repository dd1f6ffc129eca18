"""Who may do what in the admin: one permission per operator verb, checked on the server.

Layer: surface. The permissions are declared on :class:`~ultimat3_jobs.models.Job`
(``Meta.permissions``); the admin only asks the user for them.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from ultimat3_jobs.conf import get_settings

VIEW_JOB = "ultimat3_jobs.view_job"
"""Django's own view permission on jobs: the changelist, a job's page, the pages of queues."""
VIEW_JOB_INPUT = "ultimat3_jobs.view_job_input"
"""See a job's input, progress and result without redaction."""
CANCEL_JOB = "ultimat3_jobs.cancel_job"
REQUEUE_JOB = "ultimat3_jobs.requeue_job"
PROMOTE_JOB = "ultimat3_jobs.promote_job"
REMOVE_JOB = "ultimat3_jobs.remove_job"
PAUSE_QUEUE = "ultimat3_jobs.pause_queue"
"""Pause and resume queues, job names and cron jobs."""
RELEASE_LEASE = "ultimat3_jobs.release_lease"
"""Free a stuck concurrency key's slots (the queues page's leases)."""


def has(user: Any, permission: str) -> bool:
    """Whether ``user`` (an active staff member, as the admin requires) holds ``permission``."""
    return bool(user.is_active and user.is_staff and user.has_perm(permission))


def can_watch(user: Any) -> bool:
    """Whether ``user`` may see the queues page and the dashboard: anyone who may see jobs,
    pause queues or release leases."""
    return has(user, VIEW_JOB) or has(user, PAUSE_QUEUE) or has(user, RELEASE_LEASE)


def author(user: Any) -> str:
    """Who a pause made in the admin is recorded as: ``admin:<user name>`` (the CLI writes
    ``cli:<user name>``)."""
    return f"admin:{user.get_username()}"


class OperatorRecordsAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Records the operator looks at but never edits by form (pauses, workers, cron jobs): seen by
    anyone who may see jobs or pause queues, on the job store's database."""

    show_facets = admin.ShowFacets.NEVER

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).using(get_settings().database)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or can_watch(request.user)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
