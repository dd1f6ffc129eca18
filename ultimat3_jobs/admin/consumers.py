"""Consumers: each consumer's committed cursor, items handled, turns and lag, read-only.

Layer: surface. The rows are ``x_consumer_cursors`` (model ``ConsumerCursor``), read on the
consumers' database at each page view; the lag is asked of the consumer's source (declared in
this process) at each page view too, so the page shows the store as it is. Consumers declared
here that have not taken a turn yet are listed under the table. Seeing consumers takes Django's
view permission on them, ``view_job`` or ``pause_queue``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from ultimat3_jobs.admin import deferred
from ultimat3_jobs.admin.permissions import OperatorRecordsAdmin
from ultimat3_jobs.models import ConsumerCursor

if TYPE_CHECKING:
    from ultimat3_jobs.consumers.declare import ConsumerHandle

NOT_DECLARED = "not declared here"


def _declared() -> dict[str, ConsumerHandle]:
    return {spec.name: spec for spec in deferred.consumers.registered_consumers()}


@admin.register(ConsumerCursor)
class ConsumerAdmin(OperatorRecordsAdmin):
    list_display = ("name", "cursor_text", "handled", "turns", "lag", "moved_at", "created_at")
    fields = list_display
    readonly_fields = ("cursor_text", "lag")
    search_fields = ("name",)
    ordering = ("name",)
    change_list_template = "ultimat3_jobs/admin/consumercursor/change_list.html"
    in_job_store = False

    def store_alias(self) -> str:
        return deferred.consumer_loop.database()

    @admin.display(description="cursor")
    def cursor_text(self, row: ConsumerCursor) -> str:
        return "-" if row.cursor is None else json.dumps(row.cursor)

    @admin.display(description="lag")
    def lag(self, row: ConsumerCursor) -> str:
        """Items after the committed cursor, asked of the source now."""
        spec = _declared().get(row.name)
        if spec is None:
            return NOT_DECLARED
        found = spec.source.lag(row.cursor)
        return "unknown" if found is None else f"{found:,}"

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        stored = set(self.get_queryset(request).values_list("name", flat=True))
        waiting = [name for name in _declared() if name not in stored]
        context = {**(extra_context or {}), "consumers_without_turn": waiting}
        return super().changelist_view(request, extra_context=context)
