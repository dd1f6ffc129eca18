"""The job admin: the changelist's search and paging, a job's page, and one admin action per
operator verb (the changelist's rows and cells are in :mod:`~ultimat3_jobs.admin.changelist`,
its filters in :mod:`~ultimat3_jobs.admin.job_filters`, the actions in
:mod:`~ultimat3_jobs.admin.job_actions`, the job page's pieces in
:mod:`~ultimat3_jobs.admin.job_page`; what a user may see of a job is decided by
:mod:`~ultimat3_jobs.operator.redaction`).

Layer: surface. Reads the ``x_jobs`` table through the ORM (the changelist, a page of rows) and
the driver (a job in full, through :mod:`~ultimat3_jobs.operator.introspection`); where the
driver's store is not the ORM's (``store_in_orm`` False: Redis, memory), the changelist's rows
and a job's page are read through the driver too (:mod:`~ultimat3_jobs.admin.driver_jobs`),
so the pages, filters, search, paging and actions are the same on every driver; every change
goes through :mod:`~ultimat3_jobs.operator.verbs`, each behind its own permission, checked on
the server by Django's action framework (an action the user may not run is not offered, and a
POST naming it is refused as "No action selected").

Cost of a changelist page: one query for the rows (the page plus one look-ahead row, only the
columns shown), whatever the page size; no ``COUNT(*)``, no ``DISTINCT`` for the filters, no
facet counts.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import PAGE_VAR, ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse

from ultimat3_jobs.admin import deferred
from ultimat3_jobs.admin.changelist import JobChangeList, JobListColumns
from ultimat3_jobs.admin.driver_jobs import job_from_record, job_rows
from ultimat3_jobs.admin.job_actions import JOB_PAGE_ACTIONS, RETURN_TO_JOB, JobActions
from ultimat3_jobs.admin.job_filters import (
    FILTER_PARAMETERS,
    NameFilter,
    QueueFilter,
    TenantFilter,
)
from ultimat3_jobs.admin.paginator import WindowPaginator
from ultimat3_jobs.admin.permissions import (
    CANCEL_JOB,
    PAUSE_QUEUE,
    PROMOTE_JOB,
    REMOVE_JOB,
    REQUEUE_JOB,
    VIEW_JOB_INPUT,
    has,
    reads_orm,
    verb_permission,
)
from ultimat3_jobs.admin.search import ExactSearch
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.errors import JobNotFound
from ultimat3_jobs.models import Job
from ultimat3_jobs.types import JobState

SUMMARY_FIELDS = (
    "id",
    "name",
    "queue",
    "state",
    "priority",
    "tenant_id",
    "idempotency_key",
    "enqueued_by",
    "worker_id",
    "traceparent",
)
"""The model fields a job's page may render as a form: none of them holds input."""


@admin.register(Job)
class JobAdmin(ExactSearch, JobActions, JobListColumns, admin.ModelAdmin):  # type: ignore[type-arg]
    """Read-only jobs: filters, exact search, newest first, a page at a fixed cost, and an
    action per verb."""

    list_display = (
        "job_id",
        "job_name",
        "job_queue",
        "state_badge",
        "attempts",
        "tenant",
        "created",
        "due",
        "finished",
        "last_error",
    )
    list_display_links = ("job_id",)
    list_filter = (
        ("state", admin.ChoicesFieldListFilter),
        QueueFilter,
        NameFilter,
        TenantFilter,
    )
    search_fields = ("id",)  # shows the search box; get_search_results does the search
    search_help_text = "An exact job id, or an exact idempotency key."
    ordering = ("-created_at", "-id")
    sortable_by = ("created",)
    list_per_page = 100
    list_max_show_all = 0
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    actions_selection_counter = True
    fields = SUMMARY_FIELDS
    change_list_template = "ultimat3_jobs/admin/job/change_list.html"
    change_form_template = "ultimat3_jobs/admin/job/change_form.html"
    actions = (
        "cancel_jobs",
        "requeue_jobs",
        "promote_jobs",
        "remove_jobs",
        "retry_failed_of_name",
        "pause_job_names",
        "resume_job_names",
    )

    # -- permissions: read-only rows, one permission per verb ------------------------------

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Job | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Job | None = None) -> bool:
        return False

    has_cancel_permission = verb_permission(CANCEL_JOB)
    has_requeue_permission = verb_permission(REQUEUE_JOB)
    has_promote_permission = verb_permission(PROMOTE_JOB)
    has_remove_permission = verb_permission(REMOVE_JOB)
    has_pause_permission = verb_permission(PAUSE_QUEUE)

    # -- reading ---------------------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> Any:
        if not reads_orm():
            return job_rows(get_driver())
        return super().get_queryset(request).using(get_settings().database)

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Job | None:
        if reads_orm():
            return super().get_object(request, object_id, from_field)
        try:
            record = get_driver().job_get(job_id=uuid.UUID(object_id))
        except ValueError:
            return None
        return None if record is None else job_from_record(record)

    def get_sortable_by(self, request: HttpRequest) -> Any:
        """Newest first only where the driver reads the jobs: ``job_list`` has one order."""
        return super().get_sortable_by(request) if reads_orm() else ()

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return JobChangeList

    def get_paginator(
        self,
        request: HttpRequest,
        queryset: QuerySet[Job],
        per_page: int,
        orphans: int = 0,
        allow_empty_first_page: bool = True,
    ) -> WindowPaginator:
        try:
            number = int(request.GET.get(PAGE_VAR, 1))
        except ValueError:
            number = 1
        return WindowPaginator(queryset, per_page, 0, allow_empty_first_page, page_number=number)

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        """Only the filters' own parameters. Django would allow any lookup on the model's own
        columns from the URL, ``?input__api_token__startswith=sk_`` included: an oracle that
        would tell a user without ``view_job_input`` a redacted value, a letter at a time."""
        return lookup in FILTER_PARAMETERS

    def exact_matches(
        self, request: HttpRequest, queryset: QuerySet[Job], term: str
    ) -> QuerySet[Job]:
        """An exact job id, else an exact idempotency key. A key matches only jobs whose key
        the user may see (no oracle for a masked key)."""
        try:
            job_id = uuid.UUID(term)
        except ValueError:
            names = deferred.redaction.key_searchable_names(
                reveal=has(request.user, VIEW_JOB_INPUT)
            )
            found = queryset.filter(idempotency_key=term)
            return found if names is None else found.filter(name__in=names)
        return queryset.filter(id=job_id)

    # -- a job's page ----------------------------------------------------------------------

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = dict(extra_context or {})
        if self.has_view_or_change_permission(request):
            context.update(self.job_page_context(request, unquote(object_id)))
        return super().change_view(request, object_id, form_url, context)

    def job_page_context(self, request: HttpRequest, object_id: str) -> dict[str, Any]:
        """What a job's page shows, read through the driver: its input, progress and result
        redacted unless the user may see input, its errors one per attempt, its timings."""
        page = deferred.job_page
        try:
            job_id = deferred.verbs.parse_job_id(object_id)
        except JobNotFound:
            return {}
        record = get_driver().job_get(job_id=job_id)
        if record is None:
            return {}
        reveal = has(request.user, VIEW_JOB_INPUT)
        shown = deferred.redaction.disclosure(record.name, reveal=reveal)
        detail = deferred.introspection.record_as_json(record, shown=shown)
        progress = detail["progress"]
        state = record.state
        return {
            "job": detail,
            "reveal": reveal,
            "shown": shown,
            "sensitive_fields": sorted(shown.sensitive),
            "input_text": page.pretty(detail["input"]),
            "progress_text": None if progress is None else page.pretty(progress),
            "progress_percent": page.progress_percent(progress),
            "result_text": None if record.result is None else page.pretty(detail["result"]),
            "attempt_errors": page.attempt_errors(detail["errors"]),
            "steps": page.step_rows(get_driver(), job_id, shown),  # durable steps
            "timings": [
                ("created", record.created_at),
                ("due (run_at)", record.run_at),
                ("started", record.started_at),
                ("finished", record.finished_at),
                ("lease ends", record.lease_expires_at if state is JobState.RUNNING else None),
            ],
            "waited_seconds": page.duration(record.started_at, record.run_at),
            "ran_seconds": page.duration(record.finished_at, record.started_at),
            "job_actions": self.job_page_actions(request, state, name=record.name),
            "return_to_job": RETURN_TO_JOB,
            "changelist_url": reverse(
                f"{self.admin_site.name}:ultimat3_jobs_job_changelist",
                current_app=self.admin_site.name,
            ),
        }

    def job_page_actions(
        self, request: HttpRequest, state: JobState, *, name: str
    ) -> list[tuple[str, str]]:
        """The buttons of a job's page, as (action name, label): the actions this user may
        run that apply to a job in ``state`` (the verb refuses the others anyway), with pause
        or resume as job name ``name`` is (see :func:`job_page.fitting_buttons`)."""
        allowed = self.get_actions(request)
        buttons = [
            (action, label)
            for action, (label, states) in JOB_PAGE_ACTIONS.items()
            if action in allowed and (states is None or state in states)
        ]
        return deferred.job_page.fitting_buttons(buttons, driver=get_driver(), name=name)

    # -- URLs: the queues page, the dashboard and the backfills live under the jobs -----

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        custom = [
            path(
                "queues/",
                self.admin_site.admin_view(self.queues_view),
                name="{}_{}_queues".format(*info),
            ),
            path(
                "dashboard/",
                self.admin_site.admin_view(self.dashboard_view),
                name="{}_{}_dashboard".format(*info),
            ),
            path(
                "backfills/",
                self.admin_site.admin_view(self.backfills_view),
                name="{}_{}_backfills".format(*info),
            ),
        ]
        return custom + list(super().get_urls())

    def queues_view(self, request: HttpRequest) -> HttpResponse:
        return deferred.queues.queues_view(self, request)

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        return deferred.dashboard.dashboard_view(self, request)

    def backfills_view(self, request: HttpRequest) -> HttpResponse:
        return deferred.backfills.backfills_view(self, request)
