"""The dashboard: per queue depth and age, completed and failed attempts per minute over the last
hour as a chart drawn on the server (plain SVG: no script, no CDN, no network), and the live
workers with their slots and demand.

Layer: surface. Four reads, whatever the size of the tables: ``queue_stats``, ``pause_list``,
``counter_read`` (minute buckets of the last hour) and ``worker_list``. Seeing it takes
``view_job`` or ``pause_queue``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from ultimat3_jobs.admin.display import format_age, queue_rows
from ultimat3_jobs.admin.permissions import VIEW_JOB, has
from ultimat3_jobs.admin.watch_pages import refusal, watch_page
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.operator import introspection
from ultimat3_jobs.types import COUNTER_OUTCOMES, CounterRow

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

MINUTES = 60
"""The chart's span: the last hour, one bar or point per minute (the current one included)."""

FAILED_OUTCOMES = ("retried", "dead", "dropped")
"""Counter columns that are a failed attempt: it raised, then was retried, kept as a dead
letter, or dropped. ``refused`` (an attempt given back) and ``cancelled`` are neither."""

# The chart's geometry, in SVG user units (the SVG scales to its box).
WIDTH = 720
HEIGHT = 220
LEFT = 44
RIGHT = 12
TOP = 14
BOTTOM = 30


@dataclass(frozen=True, slots=True)
class Minute:
    start: datetime
    completed: int
    failed: int


def minute_series(rows: Sequence[CounterRow], *, start: datetime) -> list[Minute]:
    """:data:`MINUTES` buckets from ``start`` (a whole minute): completed and failed attempts
    of every job name, 0 where nothing settled."""
    completed = [0] * MINUTES
    failed = [0] * MINUTES
    for row in rows:
        index = int((row.bucket - start).total_seconds() // 60)
        if 0 <= index < MINUTES:
            completed[index] += row.completed
            failed[index] += sum(getattr(row, outcome) for outcome in FAILED_OUTCOMES)
    return [
        Minute(start=start + timedelta(minutes=i), completed=completed[i], failed=failed[i])
        for i in range(MINUTES)
    ]


def nice_ceiling(value: int) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, ... that is at least ``value``."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return step * factor
        step *= 10


def chart(series: Sequence[Minute]) -> dict[str, Any]:
    """The chart as coordinates for the template: a ``<polyline>`` of completed attempts, a
    ``<rect>`` per minute with failed ones, the axes' ticks, and each minute's numbers for a
    ``<title>`` (the tooltip a browser shows on hover)."""
    plot_width = WIDTH - LEFT - RIGHT
    plot_height = HEIGHT - TOP - BOTTOM
    top_value = nice_ceiling(max([1, *(m.completed for m in series), *(m.failed for m in series)]))
    slot = plot_width / max(1, len(series))

    def y(value: int) -> float:
        return TOP + plot_height * (1 - value / top_value)

    points = []
    bars = []
    for i, minute in enumerate(series):
        x = LEFT + slot * (i + 0.5)
        label = timezone.localtime(minute.start).strftime("%H:%M")
        points.append(
            {
                "x": f"{x:.1f}",
                "y": f"{y(minute.completed):.1f}",
                "title": f"{label}: {minute.completed} completed",
            }
        )
        if minute.failed:
            height = plot_height * minute.failed / top_value
            bars.append(
                {
                    "x": f"{x - slot * 0.35:.1f}",
                    "y": f"{TOP + plot_height - height:.1f}",
                    "width": f"{slot * 0.7:.1f}",
                    "height": f"{height:.1f}",
                    "title": f"{label}: {minute.failed} failed",
                }
            )
    ticks = sorted({0, top_value // 4, top_value // 2, (3 * top_value) // 4, top_value})
    y_ticks = [{"y": f"{y(value):.1f}", "label": value} for value in ticks]
    x_ticks = [
        {
            "x": f"{LEFT + slot * (i + 0.5):.1f}",
            "label": timezone.localtime(series[i].start).strftime("%H:%M"),
        }
        for i in range(0, len(series), 10)
    ]
    completed = sum(m.completed for m in series)
    failed = sum(m.failed for m in series)
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "top": TOP,
        "bottom": TOP + plot_height,
        "label_x": LEFT - 6,
        "label_y": HEIGHT - 10,
        "polyline": " ".join(f"{p['x']},{p['y']}" for p in points),
        "points": points,
        "bars": bars,
        "y_ticks": y_ticks,
        "x_ticks": x_ticks,
        "top_value": top_value,
        "completed": completed,
        "failed": failed,
        "summary": (
            f"Attempts per minute over the last hour: {completed} completed, {failed} failed."
        ),
    }


def dashboard_view(model_admin: ModelAdmin[Any], request: HttpRequest) -> HttpResponse:
    refused = refusal(request)
    if refused is not None:
        return refused
    driver = get_driver()
    now = timezone.now()
    start = now.replace(second=0, microsecond=0) - timedelta(minutes=MINUTES - 1)
    pauses = driver.pause_list()
    stats = driver.queue_stats()
    rows = driver.counter_read(since=start, period="minute")
    workers = driver.worker_list()
    overview = introspection.queues_overview(stats, pauses)
    site = model_admin.admin_site
    return watch_page(
        model_admin,
        request,
        "dashboard",
        "Jobs dashboard",
        queues=queue_rows(
            overview, workers, admin_site_name=site.name, link=has(request.user, VIEW_JOB)
        ),
        chart=chart(minute_series(rows, start=start)),
        totals=introspection.name_totals(rows),
        outcomes=COUNTER_OUTCOMES,
        workers=[
            {
                "worker": worker,
                "demand": sorted(worker.demand.items()),
                "heartbeat_age": format_age((now - worker.heartbeat_at).total_seconds()),
                "up_for": format_age((now - worker.started_at).total_seconds()),
            }
            for worker in workers
        ],
        slots=sum(worker.slots for worker in workers),
        other_pauses=[pause for pause in pauses if pause.scope != "queue"],
        since=start,
    )
