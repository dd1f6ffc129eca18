"""The operator surface on the Redis driver: every admin page shows what Redis holds and every
action changes Redis, with the permissions of PostgreSQL; the ``jobs`` CLI and the metrics scrape
read Redis too. ``x_jobs`` and the other ORM tables stay empty throughout: nothing is read
through the ORM."""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.admin.conftest import ROLES, job_failed_twice, job_in_state
from tests.admin.test_permissions import CASES, NAME, SEES_JOBS, Case, offered_actions
from tests.drivers.conftest import NO_REDIS, drop_redis_store
from tests.drivers.support import enqueue, request, state_of
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.models import Job, JobPause, JobWorker, SchedulerTask
from ultimat3_jobs.types import JobState

pytestmark = pytest.mark.skipif(not settings.REDIS_URL, reason=NO_REDIS)

REDIS_JOBS = {"DRIVER": "redis", "REDIS_ALIAS": "redis", "DEFAULT_TENANT": "none"}
CHANGELIST = "/admin/ultimat3_jobs/job/"
QUEUES = "/admin/ultimat3_jobs/job/queues/"
DASHBOARD = "/admin/ultimat3_jobs/job/dashboard/"
PAUSES = "/admin/ultimat3_jobs/jobpause/"
WORKERS = "/admin/ultimat3_jobs/jobworker/"
CRON = "/admin/ultimat3_jobs/schedulertask/"


@pytest.fixture
def redis_jobs(db: None) -> Iterator[RedisDriver]:
    """The settings' driver is Redis (the admin's ``get_driver()``), on an empty store."""
    with override_settings(ULTIMAT3_JOBS=REDIS_JOBS):
        driver = get_driver()
        assert isinstance(driver, RedisDriver)
        assert not driver.store_in_orm
        drop_redis_store(driver)
        try:
            yield driver
            # Nothing reached the ORM's tables: every page and action went through Redis.
            assert not Job.objects.exists()
            assert not JobPause.objects.exists()
            assert not JobWorker.objects.exists()
            assert not SchedulerTask.objects.exists()
        finally:
            drop_redis_store(driver)


def listed(html: str) -> list[str]:
    """The jobs a changelist page links to, in order."""
    return re.findall(r'href="/admin/ultimat3_jobs/job/([0-9a-f-]{36})/change/', html)


def selectable(html: str) -> list[str]:
    """The rows a changelist page offers for an action, in order."""
    return re.findall(r'name="_selected_action" value="([^"]+)"', html)


def paused(driver: JobDriver, scope: str, target: str) -> bool:
    return any(p.scope == scope and p.target == target for p in driver.pause_list())


# -- the job changelist -----------------------------------------------------------------------


def test_the_changelist_lists_the_jobs_in_redis_newest_first(role_client, redis_jobs):
    ids = [str(enqueue(redis_jobs, name="tests.echo")) for _ in range(3)]
    client = role_client("viewer")
    with CaptureQueriesContext(connection) as captured:
        response = client.get(CHANGELIST)
    assert response.status_code == 200
    assert listed(response.content.decode()) == ids[::-1]
    assert not [q["sql"] for q in captured.captured_queries if "x_jobs" in q["sql"]]


def test_filters_and_search_narrow_the_list(role_client, redis_jobs):
    failed = str(job_in_state(redis_jobs, "failed", name="tests.echo"))
    keyed = str(
        enqueue(redis_jobs, name="tests.add", queue="math", tenant_id="acme", idempotency_key="k-1")
    )
    plain = str(enqueue(redis_jobs, name="tests.noop"))
    client = role_client("superuser")

    def ids(**query: str) -> set[str]:
        response = client.get(CHANGELIST, query)
        assert response.status_code == 200, query
        return set(listed(response.content.decode()))

    assert ids() == {failed, keyed, plain}
    assert ids(state__exact="failed") == {failed}
    assert ids(state__exact="queued") == {keyed, plain}
    assert ids(queue="math") == {keyed}
    assert ids(name="tests.noop") == {plain}
    assert ids(tenant="acme") == {keyed}
    assert ids(q=plain) == {plain}
    assert ids(q="k-1") == {keyed}
    assert ids(q=str(uuid.uuid4())) == set()
    assert ids(state__exact="queued", queue="default") == {plain}
    # A lookup no filter declares is refused, as on PostgreSQL.
    assert client.get(CHANGELIST, {"input__x": "1"}).status_code in (302, 400)


def test_pages_of_100_newest_first(role_client, redis_jobs):
    requests = [request(name="tests.noop") for _ in range(150)]
    redis_jobs.job_enqueue_many(requests=requests)
    newest_first = [str(r.id) for r in requests][::-1]
    client = role_client("viewer")
    first = client.get(CHANGELIST).content.decode()
    assert listed(first) == newest_first[:100]
    assert "?p=2" in first
    second = client.get(CHANGELIST, {"p": "2"}).content.decode()
    assert listed(second) == newest_first[100:]
    assert "?p=3" not in second


# -- a job's page and its actions --------------------------------------------------------------


def test_a_job_page_shows_the_job_in_redis(role_client, redis_jobs):
    job_id = job_failed_twice(redis_jobs, name="tests.echo")
    html = role_client("superuser").get(f"{CHANGELIST}{job_id}/change/").content.decode()
    assert "tests.echo" in html
    assert "FIRST-TB" in html and "SECOND-TB" in html
    buttons = set(re.findall(r'name="job_action" value="([^"]+)"', html))
    assert "requeue_jobs" in buttons and "cancel_jobs" not in buttons
    missing = role_client("superuser").get(f"{CHANGELIST}{uuid.uuid4()}/change/")
    assert missing.status_code == 302  # "doesn't exist", back to the index


def test_cancel_from_a_job_page_asks_for_a_reason_and_comes_back(role_client, redis_jobs):
    job_id = job_in_state(redis_jobs, "running")
    client = role_client("operator")
    button = {"action": "cancel_jobs", "_selected_action": str(job_id), "index": "0"}
    asked = client.post(CHANGELIST, {**button, "_return_to_job": "1"})
    assert asked.status_code == 200 and "Cancel jobs?" in asked.content.decode()
    assert str(job_id) in asked.content.decode()
    assert state_of(redis_jobs, job_id) is JobState.RUNNING
    confirmed = {**button, "post": "yes", "_return_to_job": "1", "reason": "asked twice"}
    response = client.post(CHANGELIST, confirmed, follow=True)
    assert response.redirect_chain[-1][0] == f"{CHANGELIST}{job_id}/change/"
    record = redis_jobs.job_get(job_id=job_id)
    assert record is not None and record.state is JobState.CANCELLED
    assert record.errors[-1]["message"] == "asked twice"
    assert record.errors[-1]["cancelled_by"] == "admin:operator"


def test_remove_asks_first_then_removes_from_redis(role_client, redis_jobs):
    job_id = job_in_state(redis_jobs, "completed")
    client = role_client("runner")
    data = {"action": "remove_jobs", "_selected_action": str(job_id), "index": "0"}
    asked = client.post(CHANGELIST, data)
    assert asked.status_code == 200 and "Yes, remove them" in asked.content.decode()
    assert client.post(CHANGELIST, {**data, "post": "yes"}).status_code == 302
    assert redis_jobs.job_get(job_id=job_id) is None


def _name_paused(driver: JobDriver) -> bool:
    return paused(driver, "job", NAME)


REDIS_CASES = {
    **CASES,
    "pause_job_names": Case(
        setup=CASES["pause_job_names"].setup,
        moved=lambda d, job_id: _name_paused(d),
        allowed=CASES["pause_job_names"].allowed,
    ),
    "resume_job_names": Case(
        setup=CASES["resume_job_names"].setup,
        moved=lambda d, job_id: not _name_paused(d),
        allowed=CASES["resume_job_names"].allowed,
    ),
}


@pytest.mark.parametrize("role", list(ROLES))
def test_the_changelist_offers_exactly_the_permitted_actions(role, role_client, redis_jobs):
    response = role_client(role).get(CHANGELIST)
    if role == "nonstaff":
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
        return
    if role not in SEES_JOBS:
        assert response.status_code == 403
        return
    expected = {action for action, case in REDIS_CASES.items() if role in case.allowed}
    assert offered_actions(response.content.decode()) == expected


@pytest.mark.parametrize("action", list(REDIS_CASES))
@pytest.mark.parametrize("role", list(ROLES))
def test_an_action_changes_redis_only_with_its_permission(action, role, role_client, redis_jobs):
    case = REDIS_CASES[action]
    job_id = case.setup(redis_jobs)
    assert not case.moved(redis_jobs, job_id)
    data = {"action": action, "_selected_action": str(job_id), "post": "yes", "index": "0"}
    response = role_client(role).post(CHANGELIST, data)
    if role == "nonstaff":
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    elif role not in SEES_JOBS:
        assert response.status_code == 403
    else:
        assert response.status_code in (200, 302)
    assert case.moved(redis_jobs, job_id) is (role in case.allowed)


def test_select_across_acts_on_the_filtered_jobs(role_client, redis_jobs):
    ids = [job_in_state(redis_jobs, "queued", queue="across") for _ in range(3)]
    other = job_in_state(redis_jobs, "queued", queue="elsewhere")
    data = {"action": "cancel_jobs", "select_across": "1", "index": "0", "post": "yes"}
    data["_selected_action"] = str(ids[0])
    client = role_client("superuser")
    assert client.post(f"{CHANGELIST}?queue=across", data).status_code == 302
    assert {state_of(redis_jobs, job_id) for job_id in ids} == {JobState.CANCELLED}
    assert state_of(redis_jobs, other) is JobState.QUEUED


# -- queues, dashboard, workers, pauses, cron ---------------------------------------------------


def test_the_queues_page_shows_redis_and_pauses_there(role_client, redis_jobs):
    for _ in range(2):
        enqueue(redis_jobs, queue="emails")
    client = role_client("pauser_viewer")
    html = client.get(QUEUES).content.decode()
    assert "emails" in html
    response = client.post(QUEUES, {"op": "pause", "scope": "queue", "target": "emails"})
    assert response.status_code == 302
    assert paused(redis_jobs, "queue", "emails")
    assert (
        role_client("viewer").post(QUEUES, {"op": "resume", "target": "emails"}).status_code == 403
    )
    assert paused(redis_jobs, "queue", "emails")
    client.post(QUEUES, {"op": "resume", "scope": "queue", "target": "emails"})
    assert not paused(redis_jobs, "queue", "emails")


def test_the_dashboard_shows_redis_queues_and_workers(role_client, redis_jobs):
    enqueue(redis_jobs, queue="reports")
    redis_jobs.worker_heartbeat(
        worker_id="w-dash", host="h", pid=1, queues=["reports"], slots=4, ttl_seconds=60
    )
    html = role_client("viewer").get(DASHBOARD).content.decode()
    assert "reports" in html and "w-dash" in html


def test_the_workers_page_lists_the_workers_in_redis(role_client, redis_jobs):
    redis_jobs.worker_heartbeat(
        worker_id="w-page", host="box", pid=42, queues=["emails"], slots=3, ttl_seconds=60
    )
    client = role_client("pauser")
    html = client.get(WORKERS).content.decode()
    assert "w-page" in html and "box" in html and "emails" in html
    assert "w-page" in client.get(WORKERS, {"live": "yes"}).content.decode()
    assert "w-page" not in client.get(WORKERS, {"live": "no"}).content.decode()
    assert role_client("nonstaff").get(WORKERS).status_code == 302
    # A row has no link of its own; its URL typed in shows the row, read through the driver.
    assert "/jobworker/w-page/change/" not in html
    page = client.get(f"{WORKERS}w-page/change/")
    assert page.status_code == 200 and "box" in page.content.decode()
    assert client.get(f"{WORKERS}w-gone/change/").status_code == 302  # "doesn't exist"


def test_the_pauses_page_lists_and_lifts_the_pauses_in_redis(role_client, redis_jobs):
    redis_jobs.pause_add(scope="queue", target="emails", paused_by="t", reason="maintenance")
    redis_jobs.pause_add(scope="job", target="tests.echo")
    html = role_client("viewer").get(PAUSES).content.decode()
    assert "maintenance" in html and "tests.echo" in html
    assert selectable(html) == []  # the viewer may not lift a pause: no action, no checkbox
    filtered = role_client("viewer").get(PAUSES, {"scope__exact": "job"}).content.decode()
    assert "tests.echo" in filtered and "maintenance" not in filtered
    client = role_client("pauser")
    assert selectable(client.get(PAUSES).content.decode()) == ["job:tests.echo", "queue:emails"]
    data = {"action": "resume_pauses", "_selected_action": "queue:emails", "index": "0"}
    assert client.post(PAUSES, data).status_code == 302
    assert [(p.scope, p.target) for p in redis_jobs.pause_list()] == [("job", "tests.echo")]
    # Without pause_queue, the same POST lifts nothing.
    data["_selected_action"] = "job:tests.echo"
    role_client("viewer").post(PAUSES, data)
    assert paused(redis_jobs, "job", "tests.echo")


def test_the_cron_page_reads_the_scheduler_state_in_redis(role_client, redis_jobs):
    client = role_client("viewer")
    assert "tests.every_second" not in client.get(CRON).content.decode()  # never seen
    redis_jobs.scheduler_cron_sync(names=["tests.every_second"])
    redis_jobs.pause_add(scope="task", target="tests.every_second")
    html = client.get(CRON).content.decode()
    assert "tests.every_second" in html
    assert "* * * * * * (UTC)" in html
    assert 'alt="True"' in html  # paused


# -- the CLI and the metrics --------------------------------------------------------------------


def jobs_command(*args: str) -> str:
    out = io.StringIO()
    call_command("jobs", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_the_jobs_command_reads_and_changes_redis(redis_jobs):
    queued = enqueue(redis_jobs, name="tests.echo", queue="emails")
    failed = job_in_state(redis_jobs, "failed", name="tests.echo")
    listing = json.loads(jobs_command("list", "--json"))
    assert [job["id"] for job in listing["jobs"]] == [str(failed), str(queued)]
    assert json.loads(jobs_command("show", str(failed), "--json"))["state"] == "failed"
    assert "requeued" in jobs_command("requeue", str(failed))
    assert state_of(redis_jobs, failed) is JobState.QUEUED
    jobs_command("cancel", str(queued), "--reason", "not needed")
    assert state_of(redis_jobs, queued) is JobState.CANCELLED
    jobs_command("pause", "--queue", "emails")
    assert paused(redis_jobs, "queue", "emails")
    stats = json.loads(jobs_command("stats", "--json"))
    assert {q["queue"] for q in stats["queues"]} >= {"default", "emails"}
    redis_jobs.scheduler_cron_sync(names=["tests.every_second"])
    jobs_command("pause", "--cron", "tests.every_second")
    cron = {row["name"]: row for row in json.loads(jobs_command("cron", "--json"))}
    assert cron["tests.every_second"]["paused"] is True


@pytest.mark.urls("tests.operator.urls")
def test_the_metrics_scrape_reads_redis(client, redis_jobs):
    for _ in range(2):
        enqueue(redis_jobs, queue="emails")
    job_in_state(redis_jobs, "failed", queue="emails")
    redis_jobs.worker_heartbeat(
        worker_id="w-m", host="h", pid=1, queues=["emails"], slots=2, ttl_seconds=60
    )
    response = client.get(reverse("ultimat3_jobs:metrics"))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'ultimat3_jobs_queue_depth{queue="emails",state="queued"} 2.0' in body
    assert 'ultimat3_jobs_queue_dead_jobs{queue="emails"} 1.0' in body
    assert 'ultimat3_jobs_queue_workers{queue="emails"} 1.0' in body
