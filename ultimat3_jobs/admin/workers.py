"""Workers: the worker registry, read-only.

Layer: surface. A worker renews its row with every registry heartbeat; a row whose
``expires_at`` has passed belongs to a worker that stopped without saying so (the ``live``
column and filter tell them apart). Seeing workers takes Django's view permission on workers,
``view_job`` or ``pause_queue``. Queues and demand read as text ("emails, default",
"3 jobs waiting (emails 3)"), not as the JSON the row stores.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models.functions import Now
from django.http import HttpRequest

from ultimat3_jobs.admin.changelist import cell
from ultimat3_jobs.admin.driver_jobs import worker_rows
from ultimat3_jobs.admin.driver_rows import DriverRows
from ultimat3_jobs.admin.permissions import OperatorRecordsAdmin
from ultimat3_jobs.drivers.base import QUEUE_DEMAND_ROWS, JobDriver
from ultimat3_jobs.models import JobWorker


def queues_text(queues: Any) -> str:
    """The queues a worker claims from, as a list to read: ``emails, default``."""
    if not isinstance(queues, list) or not queues:
        return "-"
    return ", ".join(str(queue) for queue in queues)


def demand_text(demand: Any) -> str:
    """What a worker last reported waiting, in words: ``no job waiting``, ``1 job waiting``,
    ``3 jobs waiting (emails 3)``, with the queues that have some when there are several;
    ``at least`` when a queue's count reached the bound of the count."""
    if not isinstance(demand, dict):
        return "-"
    counts = {
        str(queue): ready
        for queue, ready in demand.items()
        if isinstance(ready, int) and not isinstance(ready, bool) and ready > 0
    }
    total = sum(counts.values())
    if not total:
        return "no job waiting"
    text = f"{total:,} job{'s' if total != 1 else ''} waiting"
    if any(ready >= QUEUE_DEMAND_ROWS for ready in counts.values()):
        text = f"at least {text}"
    if len(demand) > 1:
        text += " (" + ", ".join(f"{q} {n:,}" for q, n in sorted(counts.items())) + ")"
    return text


class LiveFilter(admin.SimpleListFilter):
    title = "live"
    parameter_name = "live"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Live"), ("no", "Expired")]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        if isinstance(queryset, DriverRows):  # the driver lists live workers only
            return queryset.none() if self.value() == "no" else queryset
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
        "queue_list",
        "slots",
        "waiting",
        "started_at",
        "heartbeat_at",
        "expires_at",
    )
    fields = list_display
    readonly_fields = ("queue_list", "waiting")
    list_filter = (LiveFilter,)
    ordering = ("id",)

    def driver_rows(self, driver: JobDriver) -> DriverRows:
        return worker_rows(driver)

    queue_list = cell("queues", "queues", queues_text)
    waiting = cell("demand", "demand", demand_text)
