"""Subject requests: each export and erase, its state and its counts per table, read-only.

Layer: surface. The rows are the audit of ``x_subject_requests`` (model ``SubjectRequest``):
who asked, when, the plan, the counts and how it ended, never the data and never the subject id.
The search box takes a subject id and finds its requests by the id's keyed digest
(:func:`~ultimat3_jobs.subjects.requests.subject_digest`). Seeing requests takes their own view
permission, ``view_subjectrequest``: seeing jobs is not enough.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import router
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from ultimat3_jobs.admin import deferred
from ultimat3_jobs.admin.permissions import ReadOnlyAdmin
from ultimat3_jobs.admin.search import ExactSearch
from ultimat3_jobs.models import SubjectRequest


def counts_text(counts: Any) -> str:
    """``app.Model 3, app.Other 0``: the rows reached per table, in words."""
    if not isinstance(counts, dict) or not counts:
        return "-"
    return ", ".join(f"{label} {count:,}" for label, count in sorted(counts.items()))


_REQUEST = ("id", "kind", "state", "requested_by", "requested_at", "finished_at")
"""What a request is and when it ran: the first columns of both the list and the page."""


@admin.register(SubjectRequest)
class SubjectRequestAdmin(ExactSearch, ReadOnlyAdmin):
    list_display = (*_REQUEST, "per_table", "job_id")
    fields = (
        *_REQUEST,
        "job_id",
        "planned",
        "per_table",
        "documents",
        "storage",
        "error",
        "subject_digest",
    )
    readonly_fields = ("planned", "per_table")
    list_filter = ("kind", "state")
    search_fields = ("subject_digest",)
    search_help_text = "A subject id (found by its digest), or exactly who asked."
    ordering = ("-id",)
    show_full_result_count = False

    def store_alias(self) -> str:
        return router.db_for_read(SubjectRequest)

    @admin.display(description="counts")
    def per_table(self, row: SubjectRequest) -> str:
        return counts_text(row.counts)

    @admin.display(description="plan")
    def planned(self, row: SubjectRequest) -> str:
        plan = row.plan if isinstance(row.plan, list) else []
        return ", ".join(f"{e.get('table')} ({e.get('rows')} rows)" for e in plan) or "-"

    def exact_matches(
        self, request: HttpRequest, queryset: QuerySet[SubjectRequest], term: str
    ) -> QuerySet[SubjectRequest]:
        return queryset.filter(
            Q(subject_digest=deferred.subject_requests.subject_digest(term)) | Q(requested_by=term)
        )
