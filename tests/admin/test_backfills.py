"""The backfills page (declared, pending, running with its progress, completed; each run's rows
and duration), fed by ``inspect_backfills()``; the retention settings on the queues page."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.urls import reverse

from tests.operator.test_metrics import parse, value
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.factories import backfill, inspect_backfills
from ultimat3_jobs.models import Backfill

BACKFILLS = "/admin/ultimat3_jobs/job/backfills/"
QUEUES = "/admin/ultimat3_jobs/job/queues/"


def nothing(rows: list) -> None:
    return None


for suffix in ("done", "running", "pending", "failed"):
    backfill(
        f"tests.admin.bf_{suffix}",
        pages=lambda cursor, limit: ([], None),
        handle=nothing,
        batch_size=10,
    )
backfill(
    "tests.admin.bf_elsewhere",
    pages=lambda cursor, limit: ([], None),
    handle=nothing,
    batch_size=10,
    environments=["nowhere"],
)


def row_of(html: str, attribute: str, value: str) -> str:
    match = re.search(rf'<tr {attribute}="{re.escape(value)}"[^>]*>(.*?)</tr>', html, re.S)
    assert match, f"no row {attribute}={value}"
    return match.group(0)


def text(fragment: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)).strip()


def run(driver: JobDriver, name: str, *, batches: int, rows: int) -> uuid.UUID:
    run_id = uuid.uuid4()
    assert driver.backfill_start(name=name, scope="all", run_id=run_id, environment="")
    for batch in range(1, batches + 1):
        assert driver.backfill_advance(
            run_id=run_id, batch=batch, cursor_json=str(batch * 100), rows=rows
        )
    return run_id


def test_the_page_shows_each_state_the_progress_and_each_runs_rows_and_duration(
    role_client, jobs_driver
):
    failed = run(jobs_driver, "tests.admin.bf_failed", batches=1, rows=5)
    assert jobs_driver.backfill_finish(run_id=failed, status="failed", error="X_BACKFILL_STALLED")
    first = run(jobs_driver, "tests.admin.bf_done", batches=1, rows=7)
    assert jobs_driver.backfill_finish(run_id=first, status="failed", error="boom")
    done = run(jobs_driver, "tests.admin.bf_done", batches=3, rows=40)
    assert jobs_driver.backfill_finish(run_id=done, status="completed")
    started = Backfill.objects.get(run_id=done).started_at
    Backfill.objects.filter(run_id=done).update(
        finished_at=started + timedelta(hours=1, minutes=2, seconds=3)
    )
    running = run(jobs_driver, "tests.admin.bf_running", batches=2, rows=25)

    html = role_client("viewer").get(BACKFILLS).content.decode()
    views = {view.name: view for view in inspect_backfills()}
    for name, state in (
        ("tests.admin.bf_done", "completed"),
        ("tests.admin.bf_running", "running"),
        ("tests.admin.bf_pending", "pending"),
        ("tests.admin.bf_failed", "failed"),
    ):
        row = row_of(html, "data-backfill", name)
        assert f'data-state="{state}"' in row, (name, row)
        assert views[name].state == state
    assert 'data-pending="yes"' in row_of(html, "data-backfill", "tests.admin.bf_pending")
    assert 'data-pending="no"' in row_of(html, "data-backfill", "tests.admin.bf_done")
    elsewhere = row_of(html, "data-backfill", "tests.admin.bf_elsewhere")
    assert "not for this environment" in elsewhere and 'data-pending="no"' in elsewhere
    # A running backfill shows its progress: rows and batches swept so far, and its cursor.
    progress = text(row_of(html, "data-backfill", "tests.admin.bf_running"))
    assert "running 50 2 200" in progress, progress
    # Every run, with its rows and duration; the completed one ran 1h 2m 3s.
    completed = row_of(html, "data-run", str(done))
    assert 'data-status="completed"' in completed
    assert re.search(r"data-run-rows>120<", completed)
    assert re.search(r"data-duration>1h 2m 3s<", completed)
    assert re.search(r"data-run-rows>7<", row_of(html, "data-run", str(first)))
    assert "X_BACKFILL_STALLED" in row_of(html, "data-run", str(failed))
    assert re.search(r"data-run-rows>50<", row_of(html, "data-run", str(running)))
    assert f"/admin/ultimat3_jobs/job/{running}/change/" in html


@pytest.mark.parametrize(
    ("role", "status"), [("pauser", 200), ("anonymous", 302), ("nonstaff", 302)]
)
def test_the_page_takes_view_job_or_pause_queue(role, status, role_client, jobs_driver):
    assert role_client(role).get(BACKFILLS).status_code == status


def test_the_page_only_reads(role_client, jobs_driver):
    assert role_client("superuser").post(BACKFILLS, {}).status_code == 405


def test_the_queues_page_shows_each_targets_retention_setting(role_client, jobs_driver, settings):
    settings.ULTIMAT3_JOBS = {
        **settings.ULTIMAT3_JOBS,
        "RETENTION_COMPLETED_SECONDS": 3600,
        "RETENTION_CANCELLED_SECONDS": None,
    }
    html = role_client("viewer").get(QUEUES).content.decode()
    cells = {
        target: text(row_of(html, "data-target", target))
        for target in (
            "jobs.completed",
            "jobs.failed",
            "jobs.cancelled",
            "outbox",
            "events",
            "counters",
            "webhooks",
        )
    }
    assert cells["jobs.completed"] == "jobs.completed RETENTION_COMPLETED_SECONDS 3600s"
    assert cells["jobs.failed"] == "jobs.failed RETENTION_FAILED_SECONDS 30d"
    assert cells["jobs.cancelled"] == "jobs.cancelled RETENTION_CANCELLED_SECONDS kept"
    assert cells["outbox"] == "outbox OUTBOX_RETENTION_SECONDS 1d"
    assert cells["webhooks"] == "webhooks RETENTION_WEBHOOKS_SECONDS 30d"
    assert "*/15 * * * *" in html


@pytest.mark.urls("tests.operator.urls")
def test_the_metrics_show_each_backfill_from_the_same_read(client, jobs_driver):
    done = run(jobs_driver, "tests.admin.bf_done", batches=2, rows=30)
    assert jobs_driver.backfill_finish(run_id=done, status="completed")
    run(jobs_driver, "tests.admin.bf_running", batches=1, rows=12)
    _, series = parse(client.get(reverse("ultimat3_jobs:metrics")).content.decode())
    views = {view.name: view for view in inspect_backfills()}
    assert value(series, "backfill_pending", name="tests.admin.bf_done") == 0
    assert value(series, "backfill_pending", name="tests.admin.bf_pending") == 1
    assert value(series, "backfill_pending", name="tests.admin.bf_elsewhere") == 0
    assert value(series, "backfill_rows", name="tests.admin.bf_done", state="completed") == 60
    assert value(series, "backfill_rows", name="tests.admin.bf_running", state="running") == 12
    for name, view in views.items():
        assert value(series, "backfill_pending", name=name) == (1 if view.pending else 0)
