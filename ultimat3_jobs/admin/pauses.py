"""Pauses: every paused queue, job name and cron, read-only, with an action that lifts them.

Layer: surface. Rows are read through the ORM (or the driver, where the ORM cannot read the
store); a pause is made on the queues page or with ``manage.py jobs pause``, and lifted
through :func:`~ultimat3_jobs.operator.verbs.resume`, never by editing a row. Seeing pauses
takes Django's view permission on pauses, ``view_job`` or ``pause_queue``; lifting one takes
``pause_queue``.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from ultimat3_jobs.admin import deferred
from ultimat3_jobs.admin.driver_jobs import pause_rows
from ultimat3_jobs.admin.driver_rows import DriverRows
from ultimat3_jobs.admin.permissions import PAUSE_QUEUE, OperatorRecordsAdmin, verb_permission
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.models import JobPause


@admin.register(JobPause)
class JobPauseAdmin(OperatorRecordsAdmin):
    list_display = ("scope", "target", "paused_by", "reason", "created_at")
    list_filter = ("scope",)
    ordering = ("scope", "target")
    change_list_template = "ultimat3_jobs/admin/jobpause/change_list.html"
    actions = ("resume_pauses",)

    def driver_rows(self, driver: JobDriver) -> DriverRows:
        return pause_rows(driver)

    has_pause_permission = verb_permission(PAUSE_QUEUE)

    @admin.action(permissions=["pause"], description="Resume (lift the selected pauses)")
    def resume_pauses(self, request: HttpRequest, queryset: QuerySet[JobPause]) -> None:
        driver = get_driver()
        lifted = 0
        for scope, target in queryset.values_list("scope", "target"):
            if deferred.verbs.resume(driver, scope=scope, target=target):  # type: ignore[arg-type]
                lifted += 1
        self.message_user(
            request, f"Lifted {lifted} pause{'s' if lifted != 1 else ''}.", messages.SUCCESS
        )
