"""The queues page (depth, oldest ready age, pause and resume), the pauses and the workers."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.drivers.support import enqueue
from tests.factories import JobFactory
from ultimat3_jobs.models import JobPause

QUEUES = "/admin/ultimat3_jobs/job/queues/"
PAUSES = "/admin/ultimat3_jobs/jobpause/"
WORKERS = "/admin/ultimat3_jobs/jobworker/"


def queue_row(html: str, queue: str) -> str:
    match = re.search(rf'<tr data-queue="{re.escape(queue)}">(.*?)</tr>', html, re.S)
    assert match, f"no row for queue {queue}"
    return match.group(1)


def cell(row: str, state: str) -> str:
    match = re.search(rf'data-state="{state}">(.*?)</td>', row, re.S)
    assert match
    return re.sub(r"<[^>]+>", "", match.group(1)).strip()


def test_depth_per_queue_and_state_and_the_oldest_ready_age(role_client, jobs_driver):
    # Ready for two hours (and a few seconds, so that the age reads "2h 0m" on any clock).
    JobFactory(queue="mail", run_at=timezone.now() - timedelta(hours=2, seconds=5))
    JobFactory(queue="mail")
    JobFactory(queue="mail", running=True)
    JobFactory(queue="mail", failed=True)
    JobFactory(queue="reports", completed=True)
    html = role_client("viewer").get(QUEUES).content.decode()
    mail = queue_row(html, "mail")
    assert [cell(mail, state) for state in ("queued", "running", "completed", "failed")] == [
        "2",
        "1",
        "0",
        "1",
    ]
    assert re.search(r'data-oldest-ready="7[0-9]{3}\.', mail)  # about two hours, in seconds
    assert "2h 0" in mail
    assert cell(queue_row(html, "reports"), "completed") == "1"
    # Counts link to the jobs they count.
    assert "/admin/ultimat3_jobs/job/?queue=mail&amp;state__exact=queued" in mail


@pytest.mark.parametrize("role", ["superuser", "pauser", "pauser_viewer"])
def test_pause_and_resume_a_queue(role, role_client, jobs_driver):
    enqueue(jobs_driver, queue="mail")
    client = role_client(role)
    html = client.get(QUEUES).content.decode()
    assert 'name="op" value="pause"' in queue_row(html, "mail")
    response = client.post(
        QUEUES, {"op": "pause", "scope": "queue", "target": "mail", "reason": "smtp down"}
    )
    assert response.status_code == 302
    pause = JobPause.objects.get(scope="queue", target="mail")
    assert (pause.paused_by, pause.reason) == (f"admin:{role}", "smtp down")
    html = client.get(QUEUES).content.decode()
    row = queue_row(html, "mail")
    assert "paused" in row and 'name="op" value="resume"' in row
    # Claims skip the paused queue.
    assert jobs_driver.job_claim(queues=["mail"], limit=5, worker_id="w", lease_seconds=30) == []
    response = client.post(
        QUEUES, {"op": "resume", "scope": "queue", "target": "mail"}, follow=True
    )
    assert "Resumed queue mail." in response.content.decode()
    assert not JobPause.objects.exists()


@pytest.mark.parametrize("role", ["viewer", "operator", "runner", "input_viewer"])
def test_pause_and_resume_are_refused_without_the_permission(role, role_client, jobs_driver):
    enqueue(jobs_driver, queue="mail")
    jobs_driver.pause_add(scope="queue", target="held")
    client = role_client(role)
    html = client.get(QUEUES).content.decode()
    assert 'name="op"' not in html  # no button offered
    assert (
        client.post(QUEUES, {"op": "pause", "scope": "queue", "target": "mail"}).status_code == 403
    )
    assert (
        client.post(QUEUES, {"op": "resume", "scope": "queue", "target": "held"}).status_code == 403
    )
    assert list(JobPause.objects.values_list("target", flat=True)) == ["held"]


def test_pausing_a_job_name_or_a_task_and_bad_requests(role_client, jobs_driver):
    client = role_client("superuser")
    client.post(QUEUES, {"op": "pause", "scope": "job", "target": "tests.echo"})
    client.post(QUEUES, {"op": "pause", "scope": "task", "target": "tests.every_second"})
    assert set(JobPause.objects.values_list("scope", "target")) == {
        ("job", "tests.echo"),
        ("task", "tests.every_second"),
    }
    for data, message in [
        ({"op": "explode", "target": "x"}, "Unknown operation"),
        ({"op": "pause", "scope": "planet", "target": "x"}, "X_PAUSE_INVALID"),
        ({"op": "pause", "scope": "queue", "target": "  "}, "X_PAUSE_INVALID"),
        ({"op": "pause", "scope": "queue", "target": "q" * 201}, "at most 200"),
    ]:
        response = client.post(QUEUES, data, follow=True)
        assert response.status_code == 200
        assert message in response.content.decode()
    assert JobPause.objects.count() == 2
    html = client.get(QUEUES).content.decode()
    assert "tests.every_second" in html  # every pause is listed, whatever its scope


def test_the_queues_page_lists_a_paused_empty_queue(role_client, jobs_driver):
    jobs_driver.pause_add(scope="queue", target="idle", paused_by="ops", reason="drain")
    html = role_client("viewer").get(QUEUES).content.decode()
    assert "paused" in queue_row(html, "idle")


def test_pauses_are_visible_and_lifted_through_the_verb(role_client, jobs_driver):
    jobs_driver.pause_add(scope="queue", target="mail", paused_by="ops", reason="smtp down")
    jobs_driver.pause_add(scope="job", target="tests.echo")
    viewer = role_client("viewer")
    html = viewer.get(PAUSES).content.decode()
    assert "smtp down" in html and "tests.echo" in html
    assert 'value="resume_pauses"' not in html
    ids = list(JobPause.objects.values_list("id", flat=True))
    data = {"action": "resume_pauses", "_selected_action": [str(i) for i in ids], "index": "0"}
    viewer.post(PAUSES, data)
    assert JobPause.objects.count() == 2
    pauser = role_client("pauser")
    assert 'value="resume_pauses"' in pauser.get(PAUSES).content.decode()
    response = pauser.post(PAUSES, data, follow=True)
    assert "Lifted 2 pauses." in response.content.decode()
    assert not JobPause.objects.exists()
    assert pauser.get(f"{PAUSES}add/").status_code == 403


def test_workers_are_visible_and_read_only(role_client, jobs_driver):
    jobs_driver.worker_heartbeat(
        worker_id="host-1:123", host="host-1", pid=123, queues=["mail"], slots=8, ttl_seconds=60
    )
    client = role_client("pauser")
    html = client.get(WORKERS).content.decode()
    assert "host-1:123" in html
    assert "host-1:123" in client.get(f"{WORKERS}?live=yes").content.decode()
    assert "host-1:123" not in client.get(f"{WORKERS}?live=no").content.decode()
    assert client.get(f"{WORKERS}add/").status_code == 403
    assert 'name="action"' not in html


def test_the_workers_list_reads_queues_and_demand_as_text(role_client, jobs_driver):
    for _ in range(3):
        enqueue(jobs_driver, queue="emails")
    jobs_driver.worker_heartbeat(
        worker_id="host-2:7",
        host="host-2",
        pid=7,
        queues=["emails", "default"],
        slots=4,
        ttl_seconds=60,
    )
    jobs_driver.worker_heartbeat(
        worker_id="host-3:8", host="host-3", pid=8, queues=["idle"], slots=1, ttl_seconds=60
    )
    client = role_client("viewer")
    html = client.get(WORKERS).content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert "emails, default" in text
    assert "3 jobs waiting (emails 3)" in text
    assert "no job waiting" in text
    # Not the JSON the rows hold.
    assert "[&quot;emails&quot;" not in html and '["emails"' not in html
    assert "{&quot;emails&quot;" not in html and "&#x27;emails&#x27;" not in html
    page = client.get(f"{WORKERS}host-2:7/change/")
    assert page.status_code == 200
    detail = page.content.decode()
    assert "emails, default" in detail and "3 jobs waiting (emails 3)" in detail
    assert "[&quot;emails&quot;" not in detail


@pytest.mark.parametrize(
    ("demand", "text"),
    [
        ({}, "no job waiting"),
        ({"mail": 1}, "1 job waiting"),
        ({"mail": 1000, "default": 2}, "at least 1,002 jobs waiting (default 2, mail 1,000)"),
        ({"mail": "x"}, "no job waiting"),
    ],
)
def test_demand_text(demand, text):
    from ultimat3_jobs.admin.workers import demand_text

    assert demand_text(demand) == text
