"""The cron tasks page: schedule, next fire, last fire and pause state, read-only, one query
for the rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import JobPauseFactory, SchedulerTaskFactory
from ultimat3_jobs.models import SchedulerTask

URL = "/admin/ultimat3_jobs/schedulertask/"


@pytest.fixture
def tasks_state(db: None) -> None:
    last = datetime(2026, 11, 28, 1, 30, tzinfo=UTC)
    SchedulerTaskFactory(
        name="tests.paris_daily", watermark=last, last_fire_at=last, updated_at=last
    )
    SchedulerTaskFactory(
        name="tests.every_second", watermark=datetime.now(UTC) - timedelta(seconds=5)
    )
    JobPauseFactory(scope="task", target="tests.every_second", paused_by="t")


@pytest.mark.usefixtures("tasks_state")
def test_the_tasks_page_shows_schedule_next_last_and_pause(role_client) -> None:
    client = role_client("viewer")
    with CaptureQueriesContext(connection) as queries:
        page = client.get(URL)
    assert page.status_code == 200
    html = page.content.decode()
    assert "30 2 * * * (Europe/Paris)" in html
    assert "run-once" in html
    assert "Nov. 28, 2026" in html  # the last fire
    assert 'alt="True"' in html and 'alt="False"' in html  # paused and not paused
    reads = [q["sql"] for q in queries.captured_queries if "x_scheduler_tasks" in q["sql"]]
    rows = [sql for sql in reads if "COUNT(*)" not in sql]
    assert len(rows) == 1, "one query for the rows, pause state included"
    assert len(reads) <= 2, "at most one count, of a table with one row per task"


@pytest.mark.usefixtures("tasks_state")
@pytest.mark.parametrize("role", ["anonymous", "nonstaff"])
def test_the_tasks_page_needs_a_staff_user(role_client, role: str) -> None:
    assert role_client(role).get(URL).status_code == 302


@pytest.mark.usefixtures("tasks_state")
def test_the_tasks_page_is_read_only(role_client) -> None:
    client = role_client("superuser")
    assert client.get(URL + "add/").status_code == 403
    change = client.post(URL + "tests.paris_daily/change/", {"watermark": "2020-01-01"})
    assert change.status_code == 403
    assert SchedulerTask.objects.get(name="tests.paris_daily").watermark.year == 2026


def test_the_admin_calls_the_rows_cron_jobs(role_client) -> None:
    """One meaning per word: the admin names the x_scheduler_tasks rows "Cron jobs"."""
    page = role_client("viewer").get("/admin/ultimat3_jobs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Cron jobs" in html
    assert "Scheduler task" not in html
