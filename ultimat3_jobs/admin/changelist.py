"""The job changelist's rows and columns: what a page reads, and how each cell reads.

Layer: surface. A page reads only :data:`LIST_COLUMNS` (never input, result, progress or
tracebacks) in one query; each row carries the
:class:`~ultimat3_jobs.operator.redaction.Disclosure` of its job name for the viewer, and the
cells that could tell more than the viewer may see (the idempotency key, the last error's
message) ask it. Long dotted names, queue names, tenant ids and error classes may wrap, at a
dot first, so that the table fits a 1,400 px window.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.admin.views.main import PAGE_VAR
from django.db.models import F, Func, IntegerField
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from ultimat3_jobs.admin import deferred
from ultimat3_jobs.admin.driver_rows import DriverAwareChangeList, DriverRows
from ultimat3_jobs.admin.paginator import WindowPaginator
from ultimat3_jobs.admin.permissions import VIEW_JOB_INPUT, has
from ultimat3_jobs.models import Job

if TYPE_CHECKING:
    from ultimat3_jobs.operator.redaction import Disclosure

LIST_COLUMNS = (
    "id",
    "name",
    "queue",
    "state",
    "priority",
    "run_at",
    "idempotency_key",
    "tenant_id",
    "attempt",
    "max_attempts",
    "created_at",
    "finished_at",
)
"""The columns a changelist page reads: never the input, result, progress or tracebacks."""

_BREAK_AFTER = re.compile(r"(?<=[.:/_])")
"""Where a long name may wrap first: after a dot, a colon, a slash or an underscore."""


class JobChangeList(DriverAwareChangeList):
    """Reads only :data:`LIST_COLUMNS`, serves the rows :class:`WindowPaginator` read, and
    gives each row the disclosure of its job name for the viewer (``row.shown``)."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> Any:
        queryset = super().get_queryset(request, exclude_parameters)
        if isinstance(queryset, DriverRows):
            return queryset  # its rows carry the summary's columns and last error already
        last_error = KeyTransform("-1", "errors")
        return queryset.only(*LIST_COLUMNS).annotate(
            error_count=Func(
                F("errors"), function="jsonb_array_length", output_field=IntegerField()
            ),
            last_error_class=KeyTextTransform("error_class", last_error),
            last_error_message=KeyTextTransform("message", last_error),
        )

    def get_ordering(self, request: HttpRequest, queryset: Any) -> list[Any]:
        """Newest (or, sorted by the created column, oldest) first, with the id to break
        ties in the same direction: the order of the index ``x_jobs_newest``, read forwards
        or backwards, so a page is an index range, not a sort."""
        ordering = list(super().get_ordering(request, queryset))
        if ordering and ordering[0] in ("created_at", "-created_at"):
            return [ordering[0], "-id" if ordering[0].startswith("-") else "id"]
        return ordering

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        paginator = self.paginator
        if isinstance(paginator, WindowPaginator):
            self.result_list = paginator.rows
            self.multi_page = paginator.page_number > 1 or paginator.has_next
            self.can_show_all = False
            # What the action bar says "N selected" of: the page, never the table.
            self.result_count = len(paginator.rows)
            self.has_next_page = paginator.has_next
        else:  # pragma: no cover -- only if a subclass swaps the paginator
            self.has_next_page = False
        reveal = has(request.user, VIEW_JOB_INPUT)
        by_name: dict[str, Disclosure] = {}
        for row in self.result_list:
            if row.name not in by_name:
                by_name[row.name] = deferred.redaction.disclosure(row.name, reveal=reveal)
            row.shown = by_name[row.name]

    def page_url(self, number: int) -> str:
        return str(self.get_query_string({PAGE_VAR: number}))

    @property
    def previous_page_url(self) -> str | None:
        return self.page_url(self.page_num - 1) if self.page_num > 1 else None

    @property
    def next_page_url(self) -> str | None:
        return self.page_url(self.page_num + 1) if self.has_next_page else None


def shown(obj: Job) -> Disclosure:
    """The disclosure :class:`JobChangeList` gave the row; the strictest one for a row that
    did not come through it."""
    found = getattr(obj, "shown", None)
    if isinstance(found, deferred.redaction.Disclosure):
        return found
    return deferred.redaction.disclosure(obj.name, reveal=False)


def breakable(text: str) -> str:
    """``text`` for a cell, with a line-break opportunity after each dot, colon, slash and
    underscore."""
    parts = [part for part in _BREAK_AFTER.split(text) if part]
    return format_html_join(mark_safe("<wbr>"), "{}", ((part,) for part in parts))


def moment(value: datetime | None) -> str:
    """A time in a list cell: the time of day when it is today, else the date too (on two
    lines when the column is narrow); the full time on hover."""
    if value is None:
        return "-"
    local = timezone.localtime(value)
    if local.date() == timezone.localdate():
        return format_html(
            '<span class="u3j-nowrap" title="{}">{}</span>',
            local.isoformat(),
            local.strftime("%H:%M:%S"),
        )
    return format_html(
        '<span title="{}"><span class="u3j-nowrap">{}</span> <span class="u3j-nowrap">{}</span>'
        "</span>",
        local.isoformat(),
        local.strftime("%Y-%m-%d"),
        local.strftime("%H:%M"),
    )


def cell(
    description: str, attribute: str, render: Callable[[Any], str], *, ordering: str | None = None
) -> Callable[[Any, Any], str]:
    """A list column that shows one attribute of the row through ``render``, headed
    ``description`` (sorted by ``ordering`` when given)."""

    @admin.display(description=description, ordering=ordering)
    def show(_admin: Any, obj: Any) -> str:
        return render(getattr(obj, attribute))

    return show


class JobListColumns:
    """The cells of the job changelist (``list_display``)."""

    @admin.display(description="id")
    def job_id(self, obj: Job) -> str:
        # A UUIDv7 begins with its time, alike for jobs enqueued together: show its random
        # end, and the whole id (and the idempotency key, as the viewer may see it) on hover.
        text = str(obj.id)
        key = shown(obj).idempotency_key(obj.idempotency_key)
        title = text if key is None else f"{text} · idempotency key {key}"
        return format_html('<code class="u3j-nowrap" title="{}">…{}</code>', title, text[-12:])

    job_name = cell("name", "name", breakable)
    job_queue = cell("queue", "queue", breakable)

    @admin.display(description="state")
    def state_badge(self, obj: Job) -> str:
        return format_html('<span class="u3j-state u3j-state-{}">{}</span>', obj.state, obj.state)

    @admin.display(description="tenant")
    def tenant(self, obj: Job) -> str:
        return breakable(obj.tenant_id) if obj.tenant_id else "-"

    created = cell("created", "created_at", moment, ordering="created_at")
    due = cell("due", "run_at", moment)
    finished = cell("finished", "finished_at", moment)

    @admin.display(description="attempts")
    def attempts(self, obj: Job) -> str:
        return f"{obj.attempt}/{obj.max_attempts}"

    @admin.display(description="last error")
    def last_error(self, obj: Job) -> str:
        """The last error's class and the count of failed attempts; its message on hover,
        for a viewer who may see error messages."""
        count = getattr(obj, "error_count", 0) or 0
        if not count:
            return "-"
        error_class = getattr(obj, "last_error_class", None) or "?"
        text = f"{error_class} ({count} attempts)" if count > 1 else str(error_class)
        message = getattr(obj, "last_error_message", None)
        if message and shown(obj).errors_shown:
            return format_html('<span title="{}">{}</span>', message, breakable(text))
        return breakable(text)
