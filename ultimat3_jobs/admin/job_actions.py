"""The job changelist's actions, one per operator verb, each behind its own permission (Django's
action framework checks it on the server: an action the user may not run is not offered, and a
POST naming it is refused as "No action selected"); a job's page runs them through its buttons.

Layer: surface. Every change goes through :mod:`~ultimat3_jobs.operator.verbs`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseBase, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from ultimat3_jobs.admin import deferred
from ultimat3_jobs.admin.permissions import author
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.models import Job
from ultimat3_jobs.types import FINISHED_STATES, LIVE_STATES, BulkResult, JobState

ACTION_LIMIT = 1000
"""An action acts on at most this many jobs; a larger selection is refused, not cut."""

RETURN_TO_JOB = "_return_to_job"
"""A POST field set by the buttons of a job's page: after the action, go back to that page."""

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


def _bulk_action(
    permission: str,
    description: str,
    verb: Callable[[JobDriver, list[uuid.UUID]], BulkResult],
    done: str,
    left: str,
) -> Callable[[JobActions, HttpRequest, QuerySet[Job]], HttpResponseBase | None]:
    """An action that runs a bulk verb taking only the ids over the selection, reports what
    moved and what was ``left`` as it was, and goes back to the job's page when it started
    there."""

    @admin.action(permissions=[permission], description=description)
    def run(
        self: JobActions, request: HttpRequest, queryset: QuerySet[Job]
    ) -> HttpResponseBase | None:
        ids = self._selected_ids(request, queryset)
        if not ids:
            return None
        self._report(request, done, verb(get_driver(), ids), left)
        return self._after(request, ids)

    return run


class JobActions(admin.ModelAdmin):  # type: ignore[type-arg]
    """The actions of :class:`~ultimat3_jobs.admin.jobs.JobAdmin`, and what they share: the
    selection's bounds, the report of a bulk verb, the way back to a job's page."""

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

    def _each_name(
        self,
        request: HttpRequest,
        queryset: QuerySet[Job],
        verb: Callable[[str], bool],
        changed: str,
        unchanged: str,
    ) -> None:
        """Run ``verb`` on each selected job name and say, per name, whether it changed."""
        for name in self._selected_names(request, queryset):
            if verb(name):
                self.message_user(request, changed.format(name), messages.SUCCESS)
            else:
                self.message_user(request, unchanged.format(name), messages.INFO)

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
        form = deferred.cancel.confirmed_form(request)
        if not form.is_valid():
            return deferred.cancel.confirmation_page(
                self, request, queryset, form, return_to_job=RETURN_TO_JOB, limit=ACTION_LIMIT
            )
        reason, who = form.cleaned_data["reason"], author(request.user)
        result = deferred.verbs.cancel_many(get_driver(), ids, reason=reason, cancelled_by=who)
        self._report(request, "Cancelled", result, "already finished, or gone")
        return self._after(request, ids)

    requeue_jobs = _bulk_action(
        "requeue",
        "Requeue the selected jobs (finished ones)",
        lambda driver, ids: deferred.verbs.requeue_many(driver, ids),
        "Requeued",
        "queued or running, gone, or a live job holds its idempotency key",
    )
    promote_jobs = _bulk_action(
        "promote",
        "Run the selected jobs now",
        lambda driver, ids: deferred.verbs.promote_many(driver, ids),
        "Made due now",
        "already due, not queued, or gone",
    )

    @admin.action(permissions=["remove"], description="Remove the selected jobs")
    def remove_jobs(self, request: HttpRequest, queryset: QuerySet[Job]) -> HttpResponseBase | None:
        ids = self._selected_ids(request, queryset)
        if not ids:
            return None
        if request.POST.get("post") != "yes":
            return self._confirm_remove(request, queryset, ids)
        result = deferred.verbs.remove_many(get_driver(), ids)
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
            result = deferred.verbs.retry_failed(driver, name)
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
        driver, who = get_driver(), author(request.user)
        self._each_name(
            request,
            queryset,
            lambda name: deferred.verbs.pause_job(
                driver, name, paused_by=who, reason="paused from the admin"
            ),
            "Paused job name {}.",
            "Job name {} was already paused.",
        )
        return None

    @admin.action(permissions=["pause"], description="Resume the selected jobs' names")
    def resume_job_names(
        self, request: HttpRequest, queryset: QuerySet[Job]
    ) -> HttpResponseBase | None:
        driver = get_driver()
        self._each_name(
            request,
            queryset,
            lambda name: deferred.verbs.resume_job(driver, name),
            "Resumed job name {}.",
            "Job name {} was not paused.",
        )
        return None
