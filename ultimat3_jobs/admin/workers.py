"""Workers: the worker registry, read-only.

Layer: surface. A worker renews its row with every registry heartbeat; a row whose
``expires_at`` has passed belongs to a worker that stopped without saying so (the ``live``
column and filter tell them apart). Seeing workers takes Django's view permission on workers,
``view_job`` or ``pause_queue``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.db.models.functions import Now
from django.http import HttpRequest

from ultimat3_jobs.admin.permissions import OperatorRecordsAdmin
from ultimat3_jobs.models import JobWorker


class LiveFilter(admin.SimpleListFilter):
    title = "live"
    parameter_name = "live"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Live"), ("no", "Expired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(expires_at__gt=Now())
        if self.value() == "no":
            return queryset.filter(expires_at__lte=Now())
        return queryset


@admin.register(JobWorker)
class JobWorkerAdmin(OperatorRecordsAdmin):
    list_display = (
        "id",
        "host",
        "pid",
        "queues",
        "slots",
        "demand",
        "started_at",
        "heartbeat_at",
        "expires_at",
    )
    list_filter = (LiveFilter,)
    ordering = ("id",)
