"""Cron jobs: each ``@cron`` declaration's schedule, next fire, last fire and pause state,
read-only.

Layer: surface. The durable state is ``x_scheduler_tasks`` (model ``SchedulerTask``, so the page's
URL stays ``.../schedulertask/``); the schedule comes from the declaration, the pause from
``x_job_pauses``, in one query per page; where the ORM cannot read the store, the cron jobs
declared here that the store holds a state for, through ``scheduler_cron_read`` and
``pause_list``. Pause and resume a cron job from the queues page.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.contrib import admin
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest

from ultimat3_jobs.admin.driver_jobs import cron_rows
from ultimat3_jobs.admin.driver_rows import DriverRows
from ultimat3_jobs.admin.permissions import OperatorRecordsAdmin, reads_orm
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.model.cron import Schedule
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.models import JobPause, SchedulerTask
from ultimat3_jobs.types import CRON_SCOPE


@admin.register(SchedulerTask)
class CronAdmin(OperatorRecordsAdmin):
    list_display = (
        "name",
        "schedule",
        "catch_up",
        "next_fire",
        "last_fire_at",
        "last_job_id",
        "paused",
    )
    ordering = ("name",)
    show_full_result_count = False

    def driver_rows(self, driver: JobDriver) -> DriverRows:
        return cron_rows(driver)

    def get_queryset(self, request: HttpRequest) -> Any:
        if not reads_orm():
            return super().get_queryset(request)
        pauses = JobPause.objects.filter(scope=CRON_SCOPE, target=OuterRef("name"))
        rows: QuerySet[SchedulerTask] = SchedulerTask.objects.using(get_settings().database)
        return rows.annotate(is_paused=Exists(pauses)).order_by("name")

    @staticmethod
    def _schedule(row: SchedulerTask) -> Schedule | None:
        handle = registry.find(row.name)
        return handle.definition.schedule if handle is not None else None

    @admin.display(description="schedule")
    def schedule(self, row: SchedulerTask) -> str:
        found = self._schedule(row)
        return f"{found.cron} ({found.tz})" if found else "not declared here"

    @admin.display(description="catch-up")
    def catch_up(self, row: SchedulerTask) -> str:
        found = self._schedule(row)
        return str(found.catch_up) if found else "-"

    @admin.display(description="next fire")
    def next_fire(self, row: SchedulerTask) -> datetime | None:
        found = self._schedule(row)
        if found is None:
            return None
        return found.next_after(max(row.watermark, datetime.now(UTC)))

    @admin.display(description="paused", boolean=True)
    def paused(self, row: SchedulerTask) -> bool:
        return bool(getattr(row, "is_paused", False))
