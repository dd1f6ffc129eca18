"""The job admin: the changelist's filters and search, a job's page, and one admin action per
operator verb (the changelist's rows and cells are in :mod:`~ultimat3_jobs.admin.changelist`,
the job page's pieces in :mod:`~ultimat3_jobs.admin.job_page`; what a user may see of a job
is decided by :mod:`~ultimat3_jobs.operator.redaction`).

Layer: surface. Reads the ``x_jobs`` table through the ORM (the changelist, a page of rows) and
the driver (a job in full, through :mod:`~ultimat3_jobs.operator.introspection`); every change
goes through :mod:`~ultimat3_jobs.operator.verbs`, each behind its own permission, checked on
the server by Django's action framework (an action the user may not run is not offered, and a
POST naming it is refused as "No action selected").

Cost of a changelist page: one query for the rows (the page plus one look-ahead row, only the
columns shown), whatever the page size; no ``COUNT(*)``, no ``DISTINCT`` for the filters, no
facet counts.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import PAGE_VAR, ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from ultimat3_jobs.admin import cancel, dashboard, job_page, queues
from ultimat3_jobs.admin.changelist import JobChangeList, JobListColumns
from ultimat3_jobs.admin.paginator import WindowPaginator
from ultimat3_jobs.admin.permissions import (
    CANCEL_JOB,
    PAUSE_QUEUE,
    PROMOTE_JOB,
    REMOVE_JOB,
    REQUEUE_JOB,
    VIEW_JOB_INPUT,
    author,
    has,
)
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.errors import JobNotFound
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.models import Job
from ultimat3_jobs.operator import introspection, verbs
from ultimat3_jobs.operator.redaction import disclosure, key_searchable_names
from ultimat3_jobs.types import FINISHED_STATES, LIVE_STATES, BulkResult, JobState

ACTION_LIMIT = 1000
"""An action acts on at most this many jobs; a larger selection is refused, not cut."""

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

JOB_PAGE_ACTIONS: dict[str, tuple[str, frozenset[JobState] | None]] = {
    "cancel_jobs": ("Cancel", LIVE_STATES),
    "requeue_jobs": ("Requeue", FINISHED_STATES),
    "promote_jobs": ("Run now", frozenset({JobState.QUEUED})),
    "remove_jobs": ("Remove", frozenset(JobState) - {JobState.RUNNING}),
    "retry_failed_of_name": ("Retry all failed jobs of this name", None),
    "pause_job_names": ("Pause this job name", None),
    "resume_job_names": ("Resume this job name", None),
}
"""The buttons of a job's page: each runs the changelist action of that name on the job, when
the job's state is one the verb acts on (``None``: any state)."""

FILTER_PARAMETERS = frozenset({"state__exact", "queue", "name", "tenant"})
"""The only lookups the changelist takes from its URL: those of its filters."""

RETURN_TO_JOB = "_return_to_job"
"""A POST field set by the buttons of a job's page: after the action, go back to that page."""


# -- filters ----------------------------------------------------------------------------------


class _ExactValueFilter(admin.SimpleListFilter):
    """Exact match on one column; the choices come from the declared jobs (no query), plus the
    value asked for when it is not one of them."""

    field: str

    def declared(self) -> list[str]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        values = set(self.declared())
        current = request.GET.get(self.parameter_name or "")
        if current:
            values.add(current)
        return [(value, value) for value in sorted(values)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value:
            return queryset.filter(**{self.field: value})
        return queryset


class QueueFilter(_ExactValueFilter):
    title = "queue"
    parameter_name = "queue"
    field = "queue"

    def declared(self) -> list[str]:
        found = {definition.resolved_queue() for definition in registry.definitions()}
        found.add(get_settings().default_queue)
        return sorted(found)


class NameFilter(_ExactValueFilter):
    title = "job name"
    parameter_name = "name"
    field = "name"

    def declared(self) -> list[str]:
        return sorted(definition.name for definition in registry.definitions())


class TenantFilter(admin.SimpleListFilter):
    """Exact tenant id, typed in: a table of jobs has no cheap list of its tenants."""

    title = "tenant"
    parameter_name = "tenant"
    template = "ultimat3_jobs/admin/input_filter.html"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return []

    def has_output(self) -> bool:
        return True

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value:
            return queryset.filter(tenant_id=value)
        return queryset

    def __init__(
        self, request: HttpRequest, params: dict[str, Any], model: Any, model_admin: Any
    ) -> None:
        super().__init__(request, params, model, model_admin)
        name = self.parameter_name or ""
        self.input_name = name
        self.input_value = self.value() or ""
        # The other parameters of the page, carried by the filter's form as hidden fields.
        self.hidden = [
            (key, value) for key, value in request.GET.items() if key not in (name, PAGE_VAR, "e")
        ]


@admin.register(Job)
class JobAdmin(JobListColumns, admin.ModelAdmin):  # type: ignore[type-arg]
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

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return has(request.user, CANCEL_JOB)

    def has_requeue_permission(self, request: HttpRequest) -> bool:
        return has(request.user, REQUEUE_JOB)

    def has_promote_permission(self, request: HttpRequest) -> bool:
        return has(request.user, PROMOTE_JOB)

    def has_remove_permission(self, request: HttpRequest) -> bool:
        return has(request.user, REMOVE_JOB)

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return has(request.user, PAUSE_QUEUE)

    # -- reading ---------------------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        return super().get_queryset(request).using(get_settings().database)

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

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Job], search_term: str
    ) -> tuple[QuerySet[Job], bool]:
        """An exact job id, else an exact idempotency key: an equality, never a ``LIKE``. A
        key matches only jobs whose key the user may see (no oracle for a masked key)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        try:
            job_id = uuid.UUID(term)
        except ValueError:
            names = key_searchable_names(reveal=has(request.user, VIEW_JOB_INPUT))
            found = queryset.filter(idempotency_key=term)
            return (found if names is None else found.filter(name__in=names)), False
        return queryset.filter(id=job_id), False

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
        try:
            job_id = verbs.parse_job_id(object_id)
        except JobNotFound:
            return {}
        record = get_driver().job_get(job_id=job_id)
        if record is None:
            return {}
        reveal = has(request.user, VIEW_JOB_INPUT)
        shown = disclosure(record.name, reveal=reveal)
        detail = introspection.record_as_json(record, shown=shown)
        progress = detail["progress"]
        state = record.state
        return {
            "job": detail,
            "reveal": reveal,
            "shown": shown,
            "sensitive_fields": sorted(shown.sensitive),
            "input_text": job_page.pretty(detail["input"]),
            "progress_text": None if progress is None else job_page.pretty(progress),
            "progress_percent": job_page.progress_percent(progress),
            "result_text": None if record.result is None else job_page.pretty(detail["result"]),
            "attempt_errors": job_page.attempt_errors(detail["errors"]),
            "steps": job_page.step_rows(get_driver(), job_id, shown),  # durable steps
            "timings": [
                ("created", record.created_at),
                ("due (run_at)", record.run_at),
                ("started", record.started_at),
                ("finished", record.finished_at),
                ("lease ends", record.lease_expires_at if state is JobState.RUNNING else None),
            ],
            "waited_seconds": job_page.duration(record.started_at, record.run_at),
            "ran_seconds": job_page.duration(record.finished_at, record.started_at),
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
        return job_page.fitting_buttons(buttons, driver=get_driver(), name=name)

    # -- URLs: the queues page and the dashboard live under the jobs ------------------------

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
        ]
        return custom + list(super().get_urls())

    def queues_view(self, request: HttpRequest) -> HttpResponse:
        return queues.queues_view(self, request)

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        return dashboard.dashboard_view(self, request)

    # -- actions ---------------------------------------------------------------------------

    def response_action(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        """Refuse a selection that names no job id (a crafted POST) before Django filters the
        queryset with it, which would fail on the UUID column."""
        for value in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME):
            try:
                uuid.UUID(value)
            except ValueError:
                self.message_user(
                    request,
                    "The selection names something that is not a job id. No job has been changed.",
                    messages.ERROR,
                )
                return None
        return super().response_action(request, *args, **kwargs)

    def _selected_ids(self, request: HttpRequest, queryset: QuerySet[Job]) -> list[uuid.UUID]:
        ids = list(queryset.order_by().values_list("id", flat=True)[: ACTION_LIMIT + 1])
        if len(ids) > ACTION_LIMIT:
            self.message_user(
                request,
                f"An action acts on at most {ACTION_LIMIT} jobs at a time. No job has been "
                "changed; narrow the selection with the filters.",
                messages.ERROR,
            )
            return []
        return ids

    def _selected_names(self, request: HttpRequest, queryset: QuerySet[Job]) -> list[str]:
        names = list(
            queryset.order_by("name").values_list("name", flat=True).distinct()[:ACTION_LIMIT]
        )
        return [str(name) for name in names]

    def _after(self, request: HttpRequest, ids: Sequence[uuid.UUID]) -> HttpResponseBase | None:
        """Where to go after an action started from a job's page: back to that job."""
        if request.POST.get(RETURN_TO_JOB) and len(ids) == 1:
            return HttpResponseRedirect(
                reverse(
                    f"{self.admin_site.name}:ultimat3_jobs_job_change",
                    args=[str(ids[0])],
                    current_app=self.admin_site.name,
                )
            )
        return None

    def _report(self, request: HttpRequest, done: str, result: BulkResult, left: str) -> None:
        level = messages.SUCCESS if result.remaining == 0 else messages.WARNING
        text = f"{done} {result.moved} job{'s' if result.moved != 1 else ''}."
        if result.remaining:
            text += (
                f" {result.remaining} job{'s' if result.remaining != 1 else ''} left as "
                f"{'they were' if result.remaining != 1 else 'it was'} ({left})."
            )
        self.message_user(request, text, level)

    @admin.action(permissions=["cancel"], description="Cancel the selected jobs")
    def cancel_jobs(self, request: HttpRequest, queryset: QuerySet[Job]) -> HttpResponseBase | None:
        ids = self._selected_ids(request, queryset)
        if not ids:
            return None
        form = cancel.confirmed_form(request)
        if not form.is_valid():
            return cancel.confirmation_page(
                self, request, queryset, form, return_to_job=RETURN_TO_JOB, limit=ACTION_LIMIT
            )
        reason, who = form.cleaned_data["reason"], author(request.user)
        result = verbs.cancel_many(get_driver(), ids, reason=reason, cancelled_by=who)
        self._report(request, "Cancelled", result, "already finished, or gone")
        return self._after(request, ids)

    @admin.action(permissions=["requeue"], description="Requeue the selected jobs (finished ones)")
    def requeue_jobs(
        self, request: HttpRequest, queryset: QuerySet[Job]
    ) -> HttpResponseBase | None:
        ids = self._selected_ids(request, queryset)
        if not ids:
            return None
        result = verbs.requeue_many(get_driver(), ids)
        self._report(
            request,
            "Requeued",
            result,
            "queued or running, gone, or a live job holds its idempotency key",
        )
        return self._after(request, ids)

    @admin.action(permissions=["promote"], description="Run the selected jobs now")
    def promote_jobs(
        self, request: HttpRequest, queryset: QuerySet[Job]
    ) -> HttpResponseBase | None:
        ids = self._selected_ids(request, queryset)
        if not ids:
            return None
        result = verbs.promote_many(get_driver(), ids)
        self._report(request, "Made due now", result, "already due, not queued, or gone")
        return self._after(request, ids)

    @admin.action(permissions=["remove"], description="Remove the selected jobs")
    def remove_jobs(self, request: HttpRequest, queryset: QuerySet[Job]) -> HttpResponseBase | None:
        ids = self._selected_ids(request, queryset)
        if not ids:
            return None
        if request.POST.get("post") != "yes":
            return self._confirm_remove(request, queryset, ids)
        result = verbs.remove_many(get_driver(), ids)
        self._report(request, "Removed", result, "running: cancel it first, or gone")
        return None

    def _confirm_remove(
        self, request: HttpRequest, queryset: QuerySet[Job], ids: list[uuid.UUID]
    ) -> TemplateResponse:
        jobs = list(
            queryset.order_by("-created_at", "-id").only("id", "name", "queue", "state")[
                :ACTION_LIMIT
            ]
        )
        context = {
            **self.admin_site.each_context(request),
            "title": "Remove jobs?",
            "opts": self.opts,
            "jobs": jobs,
            "running": sum(1 for job in jobs if job.state == JobState.RUNNING.value),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "changelist_url": request.get_full_path(),
        }
        return TemplateResponse(
            request, "ultimat3_jobs/admin/job/remove_confirmation.html", context
        )

    @admin.action(
        permissions=["requeue"],
        description="Retry every failed job of the selected jobs' names",
    )
    def retry_failed_of_name(
        self, request: HttpRequest, queryset: QuerySet[Job]
    ) -> HttpResponseBase | None:
        driver = get_driver()
        for name in self._selected_names(request, queryset):
            result = verbs.retry_failed(driver, name)
            level = messages.SUCCESS if result.remaining == 0 else messages.WARNING
            self.message_user(
                request,
                f"Requeued {result.moved} failed job{'s' if result.moved != 1 else ''} of "
                f"{name}; {result.remaining} still failed.",
                level,
            )
        return None

    @admin.action(permissions=["pause"], description="Pause the selected jobs' names")
    def pause_job_names(
        self, request: HttpRequest, queryset: QuerySet[Job]
    ) -> HttpResponseBase | None:
        driver = get_driver()
        who = author(request.user)
        for name in self._selected_names(request, queryset):
            fresh = verbs.pause_job(driver, name, paused_by=who, reason="paused from the admin")
            self.message_user(
                request,
                f"Paused job name {name}." if fresh else f"Job name {name} was already paused.",
                messages.SUCCESS if fresh else messages.INFO,
            )
        return None

    @admin.action(permissions=["pause"], description="Resume the selected jobs' names")
    def resume_job_names(
        self, request: HttpRequest, queryset: QuerySet[Job]
    ) -> HttpResponseBase | None:
        driver = get_driver()
        for name in self._selected_names(request, queryset):
            lifted = verbs.resume_job(driver, name)
            self.message_user(
                request,
                f"Resumed job name {name}." if lifted else f"Job name {name} was not paused.",
                messages.SUCCESS if lifted else messages.INFO,
            )
        return None
