"""The backfills page: every declared backfill with its state in this environment (pending,
running with its progress, completed, failed), what it waits for, and each recorded run's rows,
batches and duration.

Layer: surface. Fed by one read, :func:`~ultimat3_jobs.factories.inspect_backfills` (the
registry against the ``x_backfills`` ledger), the same one ``manage.py jobs backfill`` prints.
Read-only; seeing it takes ``view_job`` or ``pause_queue`` (as the queues page).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from ultimat3_jobs.admin.watch_pages import refusal, watch_page
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers.backfill_seam import BackfillRun
from ultimat3_jobs.factories.inspect import BackfillView, inspect_backfills

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin


@dataclass(frozen=True, slots=True)
class RunRow:
    """One ledger row as the page shows it: the run, and how long it ran (so far, while it
    runs)."""

    run: BackfillRun
    duration: str


@dataclass(frozen=True, slots=True)
class BackfillRow:
    view: BackfillView
    runs: list[RunRow]


def duration_text(started: datetime | None, finished: datetime | None, now: datetime) -> str:
    """``1h 2m 3s`` from ``started`` to ``finished`` (to ``now`` while unfinished); ``-``
    without a start."""
    if started is None:
        return "-"
    seconds = max(0, int(((finished or now) - started) / timedelta(seconds=1)))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m {seconds}s"
    return f"{minutes}m {seconds}s" if minutes else f"{seconds}s"


def backfill_rows(views: list[BackfillView], now: datetime) -> list[BackfillRow]:
    return [
        BackfillRow(
            view,
            [
                RunRow(run, duration_text(run.started_at, run.finished_at, now))
                for run in view.history
            ],
        )
        for view in views
    ]


def backfills_view(model_admin: ModelAdmin[Any], request: HttpRequest) -> HttpResponse:
    refused = refusal(request)
    if refused is not None:
        return refused
    views = inspect_backfills()
    return watch_page(
        model_admin,
        request,
        "backfills",
        "Backfills",
        environment=get_settings().environment,
        backfills=backfill_rows(views, timezone.now()),
        pending=sum(1 for view in views if view.pending),
    )
