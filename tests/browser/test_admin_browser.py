"""The admin in a real browser: Debian's ``chromium``, headless, driven by the ``playwright``
package (its own browser downloads are not used). Logs in, pauses a queue on the queues page,
cancels a job with the changelist action, and sees the dashboard's chart.

Skipped when ``/usr/bin/chromium`` or the ``playwright`` package is missing; to run it::

    apt-get install -y chromium && .venv/bin/pip install playwright
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PASSWORD = "a-long-test-password"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None,
        reason="the playwright package is not installed (pip install playwright)",
    ),
    pytest.mark.skipif(
        not os.access(CHROMIUM, os.X_OK),
        reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)",
    ),
]


@pytest.fixture
def operator_and_data(transactional_db, settings):
    """An operator who may see jobs, cancel them and pause queues; a queued job on "mail";
    counters for the chart; a live worker. Written before the browser starts: Playwright's
    sync API runs an event loop in this thread, where Django refuses database calls."""
    import django.contrib.admin
    from django.contrib.auth.models import Permission, User
    from django.utils import timezone

    from tests.drivers.support import enqueue
    from tests.factories import JobCounterFactory
    from ultimat3_jobs.drivers import get_driver

    # The live server serves STATIC_ROOT at STATIC_URL when staticfiles is not installed:
    # point it at the admin's own static files, so the pages look as they do in production.
    settings.STATIC_ROOT = str(Path(django.contrib.admin.__file__).parent / "static")

    user = User.objects.create_user("ops", password=PASSWORD, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="ultimat3_jobs",
            codename__in=["view_job", "cancel_job", "pause_queue"],
        )
    )
    driver = get_driver()
    job_id = enqueue(driver, queue="mail", name="tests.echo")
    enqueue(driver, queue="reports", name="tests.add", input_json='{"a": 1, "b": 2}')
    now = timezone.now().replace(second=0, microsecond=0)
    for minutes_ago, completed, retried, dead in [(1, 40, 2, 0), (7, 25, 0, 1), (20, 60, 4, 2)]:
        JobCounterFactory(
            name="tests.echo",
            bucket=now - timezone.timedelta(minutes=minutes_ago),
            completed=completed,
            retried=retried,
            dead=dead,
        )
    driver.worker_heartbeat(
        worker_id="web-1:4242",
        host="web-1",
        pid=4242,
        queues=["mail", "reports"],
        slots=8,
        ttl_seconds=300,
    )
    return job_id


def test_login_pause_cancel_and_see_the_chart(live_server, operator_and_data, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    job_id = operator_and_data
    base = live_server.url
    screenshot = tmp_path / "dashboard.png"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})

            # Log in; the admin sends us on to the queues page.
            page.goto(f"{base}/admin/login/?next=/admin/ultimat3_jobs/job/queues/")
            page.fill("#id_username", "ops")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            expect(page.locator("h1")).to_have_text("Queues")

            # Pause the "mail" queue with its row's button.
            row = page.locator('tr[data-queue="mail"]')
            row.locator('input[name="reason"]').fill("smtp provider down")
            row.locator('button[value="pause"]').click()
            expect(page.locator(".messagelist")).to_contain_text("Paused queue mail.")
            expect(page.locator('tr[data-queue="mail"]')).to_contain_text("paused")
            expect(page.locator('tr[data-queue="mail"] button[value="resume"]')).to_be_visible()
            page.screenshot(path=str(tmp_path / "queues.png"), full_page=True)

            # Cancel the job with the changelist action.
            page.goto(f"{base}/admin/ultimat3_jobs/job/")
            page.check(f'input[name="_selected_action"][value="{job_id}"]')
            page.select_option('select[name="action"]', "cancel_jobs")
            page.click('button[name="index"]')
            # The action asks for a reason first, as Django asks before a delete.
            expect(page.locator("h1")).to_have_text("Cancel jobs?")
            page.fill("#id_reason", "sent twice by mistake")
            page.click('input[value="Yes, cancel them"]')
            expect(page.locator(".messagelist")).to_contain_text("Cancelled 1 job.")
            expect(page.locator("#result_list")).to_contain_text("cancelled")
            page.screenshot(path=str(tmp_path / "jobs.png"), full_page=True)

            # The dashboard draws the last hour as an SVG chart.
            page.goto(f"{base}/admin/ultimat3_jobs/job/dashboard/")
            chart = page.locator("svg#throughput-chart")
            expect(chart).to_be_visible()
            expect(chart.locator("polyline.completed")).to_have_count(1)
            expect(chart.locator("rect.failed")).to_have_count(3)
            expect(page.locator("#workers")).to_contain_text("web-1:4242")
            box = chart.bounding_box()
            assert box is not None and box["width"] > 300 and box["height"] > 100
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()

    assert screenshot.stat().st_size > 10_000
    keep = os.environ.get("ULTIMAT3_BROWSER_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for taken in tmp_path.glob("*.png"):
            shutil.copy(taken, Path(keep) / taken.name)

    # What the browser did, read back from the store once the browser is gone.
    from ultimat3_jobs.drivers import get_driver
    from ultimat3_jobs.models import JobPause
    from ultimat3_jobs.types import JobState

    pause = JobPause.objects.get(scope="queue", target="mail")
    assert (pause.paused_by, pause.reason) == ("admin:ops", "smtp provider down")
    record = get_driver().job_get(job_id=job_id)
    assert record is not None and record.state is JobState.CANCELLED


WIDE_NAMES = (
    "billing.invoices.send_monthly_statement_with_attachments",
    "notifications.push.deliver_to_every_registered_device",
    "reports.exports.render_quarterly_revenue_spreadsheet",
    "tests.echo",
)
WIDE_QUEUES = ("notifications-high-priority", "billing-exports", "default")
WIDE_ERRORS = (
    "requests.exceptions.ConnectionError",
    "billing.providers.stripe.errors.PaymentProviderTimeoutError",
    "builtins.ValueError",
)


@pytest.fixture
def a_full_page_of_jobs(transactional_db, settings):
    """A viewer, and 120 jobs as a busy project has them: long dotted names and queue names,
    tenant ids, every state, failed attempts with long error classes, finished times."""
    import django.contrib.admin
    from django.contrib.auth.models import Permission, User
    from django.utils import timezone

    from tests.factories import JobFactory
    from ultimat3_jobs.models import Job
    from ultimat3_jobs.types import JobState

    settings.STATIC_ROOT = str(Path(django.contrib.admin.__file__).parent / "static")
    user = User.objects.create_user("watch", password=PASSWORD, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="ultimat3_jobs", codename="view_job")
    )
    states = [state.value for state in JobState]
    now = timezone.now()
    rows = []
    for number in range(120):
        state = states[number % len(states)]
        error_class = WIDE_ERRORS[number % len(WIDE_ERRORS)]
        failed = state in ("failed", "queued") and number % 2 == 0
        rows.append(
            JobFactory.build(
                name=WIDE_NAMES[number % len(WIDE_NAMES)],
                queue=WIDE_QUEUES[number % len(WIDE_QUEUES)],
                state=state,
                input={"n": number},
                tenant_id=f"org_01HZX4T9K2M7Q8R5{number:04d}",
                idempotency_key=f"statement:2026-11:customer-{number:08d}",
                attempt=3 if failed else 1,
                max_attempts=25,
                errors=[
                    {"attempt": attempt, "error_class": error_class, "message": "timed out"}
                    for attempt in range(1, 4)
                ]
                if failed
                else [],
                run_at=now - timezone.timedelta(days=2, minutes=number),
                started_at=None if state == "queued" else now - timezone.timedelta(days=2),
                finished_at=now - timezone.timedelta(days=1)
                if state in ("completed", "failed", "cancelled")
                else None,
            )
        )
    Job.objects.bulk_create(rows)


def test_the_job_list_fits_1400_pixels(live_server, a_full_page_of_jobs, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    base = live_server.url
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/admin/login/?next=/admin/ultimat3_jobs/job/")
            page.fill("#id_username", "watch")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            expect(page.locator("#result_list tbody tr")).to_have_count(100)
            widths = page.evaluate(
                "() => ({page: document.documentElement.scrollWidth,"
                " table: document.querySelector('#result_list').scrollWidth,"
                " box: document.querySelector('#changelist .results').clientWidth})"
            )
            page.screenshot(path=str(tmp_path / "job-list-1400.png"))
        finally:
            browser.close()
    keep = os.environ.get("ULTIMAT3_BROWSER_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "job-list-1400.png", Path(keep) / "job-list-1400.png")
    assert widths["page"] <= 1400, widths
    assert widths["table"] <= widths["box"], widths
