"""The cancel action's confirmation: a page listing the selected jobs, with a reason field.

Layer: surface. Like Django's delete confirmation, the first POST of the action answers this
page; its form posts the same action again with ``post=yes`` and the reason, which the verb
keeps in each job's errors with the operator's name. The reason is optional: an empty one
still records who cancelled.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from ultimat3_jobs.operator.verbs import CANCEL_REASON_MAX_LENGTH
from ultimat3_jobs.types import JobState

CONFIRMED = "post"
"""The POST field the confirmation page sets (``yes``), as Django's delete confirmation does."""
TEMPLATE = "ultimat3_jobs/admin/job/cancel_confirmation.html"
LIVE_VALUES = frozenset({JobState.QUEUED.value, JobState.RUNNING.value})


class CancelForm(forms.Form):
    reason = forms.CharField(
        required=False,
        max_length=CANCEL_REASON_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Optional. Kept in each job's errors, with your name.",
    )


def confirmed_form(request: HttpRequest) -> CancelForm:
    """The reason form of this POST: bound (and perhaps valid) only when it comes from the
    confirmation page; an unbound form is never valid."""
    if request.POST.get(CONFIRMED) == "yes":
        return CancelForm(request.POST)
    return CancelForm()


def confirmation_page(
    model_admin: Any,
    request: HttpRequest,
    queryset: QuerySet[Any],
    form: CancelForm,
    *,
    return_to_job: str,
    limit: int,
) -> TemplateResponse:
    """The page asking for a reason before the selected jobs (``queryset``, at most ``limit``
    listed) are cancelled; ``return_to_job`` is carried when the job's page asked."""
    jobs = list(
        queryset.order_by("-created_at", "-id").only("id", "name", "queue", "state")[:limit]
    )
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Cancel jobs?",
        "opts": model_admin.opts,
        "jobs": jobs,
        "finished": sum(1 for job in jobs if job.state not in LIVE_VALUES),
        "form": form,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "changelist_url": request.get_full_path(),
        "return_to_job": return_to_job if request.POST.get(return_to_job) else "",
    }
    return TemplateResponse(request, TEMPLATE, context)
