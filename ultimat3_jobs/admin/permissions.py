"""Who may do what in the admin: one permission per operator verb, checked on the server.

Layer: surface. The permissions are declared on :class:`~ultimat3_jobs.models.Job`
(``Meta.permissions``); the admin only asks the user for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest

from ultimat3_jobs.admin.driver_rows import DriverAwareChangeList, DriverRows
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver

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


def verb_permission(permission: str) -> Callable[[Any, HttpRequest], bool]:
    """A ``ModelAdmin.has_<verb>_permission`` method (what ``@admin.action(permissions=...)``
    asks): whether the request's user holds ``permission``."""

    def has_verb_permission(model_admin: Any, request: HttpRequest) -> bool:
        return has(request.user, permission)

    return has_verb_permission


def can_watch(user: Any) -> bool:
    """Whether ``user`` may see the queues page and the dashboard: anyone who may see jobs,
    pause queues or release leases."""
    return has(user, VIEW_JOB) or has(user, PAUSE_QUEUE) or has(user, RELEASE_LEASE)


def author(user: Any) -> str:
    """Who a pause made in the admin is recorded as: ``admin:<user name>`` (the CLI writes
    ``cli:<user name>``)."""
    return f"admin:{user.get_username()}"


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Records shown but never added, changed or deleted by form (their change page is a
    read-only view), read on :meth:`store_alias` (the job store's database) at each page
    view. Seeing them takes Django's own view permission on the model, unless a subclass says
    more."""

    show_facets = admin.ShowFacets.NEVER

    def store_alias(self) -> str:
        """The database the records are read from."""
        return get_settings().database

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).using(self.store_alias())

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def reads_orm() -> bool:
    """Whether the admin may read the job store with the ORM (the driver's ``store_in_orm``);
    where not, its changelists read through the driver (``admin/driver_rows.py``)."""
    return get_driver().store_in_orm


class OperatorRecordsAdmin(ReadOnlyAdmin):
    """Records the operator looks at but never edits by form (pauses, workers, cron jobs,
    consumers): seen by anyone who may see jobs or pause queues, or holds the model's own view
    permission. Records of the job store (``in_job_store``) are read through the driver where
    the ORM cannot read the store (then a row links to no page of its own)."""

    in_job_store = True
    """False for records kept in the project's database whatever the driver (consumers)."""

    def driver_rows(self, driver: JobDriver) -> DriverRows:
        """The rows of this changelist, read through ``driver``."""
        raise NotImplementedError

    def through_driver(self) -> bool:
        return self.in_job_store and not reads_orm()

    def get_queryset(self, request: HttpRequest) -> Any:
        if self.through_driver():
            return self.driver_rows(get_driver())
        return super().get_queryset(request)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return DriverAwareChangeList

    def get_list_display_links(self, request: HttpRequest, list_display: Any) -> Any:
        if self.through_driver():
            return None
        return super().get_list_display_links(request, list_display)

    def get_sortable_by(self, request: HttpRequest) -> Any:
        return () if self.through_driver() else super().get_sortable_by(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or can_watch(request.user)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)
