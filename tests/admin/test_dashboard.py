"""The dashboard: per queue depth and age, a server-rendered SVG chart of completed and failed
attempts per minute over the last hour, and the live workers."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from tests.drivers.support import enqueue
from tests.factories import JobCounterFactory
from ultimat3_jobs.admin.dashboard import MINUTES, chart, minute_series, nice_ceiling
from ultimat3_jobs.types import CounterRow

DASHBOARD = "/admin/ultimat3_jobs/job/dashboard/"


def minute(offset: int) -> datetime:
    return timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=offset)


def test_the_dashboard_draws_the_last_hour(role_client, jobs_driver):
    JobCounterFactory(name="tests.echo", bucket=minute(0), completed=12)
    JobCounterFactory(name="tests.echo", bucket=minute(5), completed=3, retried=2, dead=1)
    JobCounterFactory(name="tests.add", bucket=minute(5), completed=4)
    # Outside the hour: not drawn, not counted.
    JobCounterFactory(name="tests.echo", bucket=minute(90), completed=99)
    enqueue(jobs_driver, queue="mail")
    jobs_driver.worker_heartbeat(
        worker_id="host-1:42",
        host="host-1",
        pid=42,
        queues=["mail", "default"],
        slots=4,
        ttl_seconds=60,
    )
    response = role_client("pauser").get(DASHBOARD)
    assert response.status_code == 200
    html = response.content.decode()
    svg = re.search(r'<svg id="throughput-chart".*?</svg>', html, re.S)
    assert svg, "no chart"
    svg_text = svg.group(0)
    assert svg_text.count("<polyline") == 1
    points = re.search(r'<polyline class="completed" points="([^"]+)"', svg_text).group(1)
    assert len(points.split()) == MINUTES
    assert svg_text.count('<rect class="failed"') == 1  # one minute had failures
    assert ": 3 failed</title>" in svg_text
    assert ": 12 completed</title>" in svg_text
    assert ": 7 completed</title>" in svg_text  # two names, one minute
    assert "19 completed, 3 failed" in svg_text
    assert "<script" not in svg_text
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html
    # Queues with their depth, age and workers; the workers with slots and demand.
    assert re.search(r'<tr data-queue="mail">', html)
    assert "host-1:42" in html
    assert "mail: 1" in html  # its demand as the worker reported it
    assert "Live workers (1, 4 slots)" in html


def test_an_empty_store_still_draws_a_chart(role_client, db):
    html = role_client("viewer").get(DASHBOARD).content.decode()
    assert '<svg id="throughput-chart"' in html
    assert "No live worker." in html
    assert "Nothing settled in the last hour." in html


def test_minute_series_places_each_bucket():
    start = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    rows = [
        CounterRow(name="a", period="minute", bucket=start, completed=1, dropped=2),
        CounterRow(name="b", period="minute", bucket=start, completed=2, refused=5, cancelled=1),
        CounterRow(name="a", period="minute", bucket=start + timedelta(minutes=59), dead=1),
        CounterRow(name="a", period="minute", bucket=start + timedelta(minutes=60), completed=9),
    ]
    series = minute_series(rows, start=start)
    assert len(series) == MINUTES
    assert (series[0].completed, series[0].failed) == (3, 2)
    assert (series[59].completed, series[59].failed) == (0, 1)
    assert sum(m.completed for m in series) == 3


def test_chart_scales_to_a_round_top():
    assert [nice_ceiling(n) for n in (0, 1, 2, 3, 7, 10, 11, 120, 999)] == [
        1,
        1,
        2,
        5,
        10,
        10,
        20,
        200,
        1000,
    ]
    start = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    drawn = chart(
        minute_series(
            [CounterRow(name="a", period="minute", bucket=start, completed=37)], start=start
        )
    )
    assert drawn["top_value"] == 50
    assert [tick["label"] for tick in drawn["y_ticks"]] == [0, 12, 25, 37, 50]
    assert len(drawn["x_ticks"]) == 6
    first_y = float(drawn["points"][0]["y"])
    assert drawn["top"] < first_y < drawn["bottom"]
