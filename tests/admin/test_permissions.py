"""The permission matrix: every role and every action, as the changelist offers it and as a
crafted POST runs it; the staff gate; CSRF."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.test import Client

from tests.admin.conftest import FIRST_IN_LINE, ROLES, job_in_state
from tests.drivers.support import attempt_error, claim_one, enqueue, get, state_of
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.models import JobPause
from ultimat3_jobs.types import JobState

CHANGELIST = "/admin/ultimat3_jobs/job/"
QUEUES = "/admin/ultimat3_jobs/job/queues/"
DASHBOARD = "/admin/ultimat3_jobs/job/dashboard/"
PAUSES = "/admin/ultimat3_jobs/jobpause/"
WORKERS = "/admin/ultimat3_jobs/jobworker/"

# The job name the name-wide actions act on; no other test job carries it.
NAME = "tests.noop"


@dataclass(frozen=True)
class Case:
    """An action, a job it would move, and how to tell that it moved."""

    setup: Callable[[JobDriver], uuid.UUID]
    moved: Callable[[JobDriver, uuid.UUID], bool]
    allowed: frozenset[str]


def _future(driver: JobDriver) -> uuid.UUID:
    return enqueue(driver, name=NAME, delay_seconds=3600)


def _is_due(driver: JobDriver, job_id: uuid.UUID) -> bool:
    record = get(driver, job_id)
    return record.run_at - record.created_at < timedelta(minutes=5)


def _paused_name(driver: JobDriver) -> uuid.UUID:
    job_id = enqueue(driver, name=NAME)
    driver.pause_add(scope="job", target=NAME)
    return job_id


def _name_paused() -> bool:
    return JobPause.objects.filter(scope="job", target=NAME).exists()


CASES = {
    "cancel_jobs": Case(
        setup=lambda d: job_in_state(d, "queued", name=NAME),
        moved=lambda d, job_id: state_of(d, job_id) is JobState.CANCELLED,
        allowed=frozenset({"superuser", "operator"}),
    ),
    "requeue_jobs": Case(
        setup=lambda d: job_in_state(d, "failed", name=NAME),
        moved=lambda d, job_id: state_of(d, job_id) is JobState.QUEUED,
        allowed=frozenset({"superuser", "operator"}),
    ),
    "promote_jobs": Case(
        setup=_future,
        moved=_is_due,
        allowed=frozenset({"superuser", "runner"}),
    ),
    "remove_jobs": Case(
        setup=lambda d: job_in_state(d, "completed", name=NAME),
        moved=lambda d, job_id: state_of(d, job_id) is None,
        allowed=frozenset({"superuser", "runner"}),
    ),
    "retry_failed_of_name": Case(
        setup=lambda d: job_in_state(d, "failed", name=NAME),
        moved=lambda d, job_id: state_of(d, job_id) is JobState.QUEUED,
        allowed=frozenset({"superuser", "operator"}),
    ),
    "pause_job_names": Case(
        setup=lambda d: enqueue(d, name=NAME),
        moved=lambda d, job_id: _name_paused(),
        allowed=frozenset({"superuser", "pauser_viewer"}),
    ),
    "resume_job_names": Case(
        setup=_paused_name,
        moved=lambda d, job_id: not _name_paused(),
        allowed=frozenset({"superuser", "pauser_viewer"}),
    ),
}

SEES_JOBS = frozenset(
    {"superuser", "viewer", "input_viewer", "operator", "runner", "pauser_viewer"}
)
MATRIX = [(role, action) for role in ROLES for action in CASES]


def offered_actions(html: str) -> set[str]:
    select = re.search(r'<select name="action"[^>]*>(.*?)</select>', html, re.S)
    if select is None:
        return set()
    return set(re.findall(r'<option value="([^"]+)"', select.group(1)))


def assert_login_redirect(response) -> None:
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_every_action_is_in_the_matrix():
    from django.contrib import admin

    from ultimat3_jobs.models import Job

    assert set(admin.site._registry[Job].actions) == set(CASES)


@pytest.mark.parametrize("role", list(ROLES))
def test_changelist_offers_exactly_the_permitted_actions(role, role_client, jobs_driver):
    for case in CASES.values():
        case.setup(jobs_driver)
    response = role_client(role).get(CHANGELIST)
    if role == "nonstaff":
        assert_login_redirect(response)
        return
    if role not in SEES_JOBS:
        assert response.status_code == 403
        return
    assert response.status_code == 200
    expected = {action for action, case in CASES.items() if role in case.allowed}
    assert offered_actions(response.content.decode()) == expected
    # The job page offers the same actions as buttons, where the job's state allows them.
    job_id = CASES["cancel_jobs"].setup(jobs_driver)
    page = role_client(role).get(f"{CHANGELIST}{job_id}/change/")
    assert page.status_code == 200
    buttons = set(re.findall(r'name="job_action" value="([^"]+)"', page.content.decode()))
    live = {"cancel_jobs", "promote_jobs", "remove_jobs", "retry_failed_of_name"}
    # Pause or resume, whichever fits: the resume case above paused the job's name.
    live |= {"resume_job_names"}
    assert buttons == expected & live


@pytest.mark.parametrize("with_index", [False, True], ids=["confirmed", "button"])
@pytest.mark.parametrize(("role", "action"), MATRIX)
def test_crafted_post_moves_a_job_only_with_the_permission(
    role, action, with_index, role_client, jobs_driver
):
    case = CASES[action]
    job_id = case.setup(jobs_driver)
    assert not case.moved(jobs_driver, job_id)
    data = {"action": action, "_selected_action": str(job_id), "post": "yes"}
    if with_index:
        data["index"] = "0"
    response = role_client(role).post(CHANGELIST, data)
    if role == "nonstaff":
        assert_login_redirect(response)
    elif role not in SEES_JOBS:
        assert response.status_code == 403
    else:
        assert response.status_code in (200, 302)
    assert case.moved(jobs_driver, job_id) is (role in case.allowed)


def test_a_refused_action_says_so(role_client, jobs_driver):
    job_id = job_in_state(jobs_driver, "queued")
    client = role_client("runner")  # may promote and remove, not cancel
    response = client.post(
        CHANGELIST, {"action": "cancel_jobs", "_selected_action": str(job_id)}, follow=True
    )
    assert "No action selected." in response.content.decode()
    assert state_of(jobs_driver, job_id) is JobState.QUEUED


def test_select_across_acts_on_the_filtered_jobs_up_to_the_limit(
    role_client, jobs_driver, monkeypatch
):
    # Nothing offers "select all" (the changelist counts no total), but a crafted POST can ask
    # for it: the action then acts on the filtered jobs, and refuses more than ACTION_LIMIT.
    from ultimat3_jobs.admin import job_actions as jobs

    ids = [job_in_state(jobs_driver, "queued", queue="across") for _ in range(3)]
    other = job_in_state(jobs_driver, "queued", queue="elsewhere")
    client = role_client("superuser")
    data = {"action": "cancel_jobs", "select_across": "1", "index": "0", "post": "yes"}
    data["_selected_action"] = str(ids[0])
    monkeypatch.setattr(jobs, "ACTION_LIMIT", 2)
    response = client.post(f"{CHANGELIST}?queue=across", data, follow=True)
    assert "acts on at most 2 jobs" in response.content.decode()
    assert {state_of(jobs_driver, job_id) for job_id in [*ids, other]} == {JobState.QUEUED}
    monkeypatch.setattr(jobs, "ACTION_LIMIT", 3)
    assert client.post(f"{CHANGELIST}?queue=across", data).status_code == 302
    assert {state_of(jobs_driver, job_id) for job_id in ids} == {JobState.CANCELLED}
    assert state_of(jobs_driver, other) is JobState.QUEUED


def test_a_selection_that_is_not_a_job_id_changes_nothing(role_client, jobs_driver):
    job_id = job_in_state(jobs_driver, "queued")
    response = role_client("superuser").post(
        CHANGELIST,
        {"action": "cancel_jobs", "_selected_action": [str(job_id), "'; drop table x_jobs"]},
        follow=True,
    )
    assert response.status_code == 200
    assert "not a job id" in response.content.decode()
    assert state_of(jobs_driver, job_id) is JobState.QUEUED


@pytest.mark.parametrize(
    "url", [CHANGELIST, QUEUES, DASHBOARD, PAUSES, WORKERS, "/admin/ultimat3_jobs/"]
)
@pytest.mark.parametrize("role", ["nonstaff", "anonymous"])
def test_non_staff_are_sent_to_the_login_page(url, role, role_client, jobs_driver):
    job_id = job_in_state(jobs_driver, "queued")
    client = role_client(role)
    assert_login_redirect(client.get(url))
    assert_login_redirect(client.get(f"{CHANGELIST}{job_id}/change/"))
    assert_login_redirect(client.post(QUEUES, {"op": "pause", "target": "default"}))
    assert_login_redirect(
        client.post(CHANGELIST, {"action": "cancel_jobs", "_selected_action": str(job_id)})
    )
    assert state_of(jobs_driver, job_id) is JobState.QUEUED
    assert not JobPause.objects.exists()


@pytest.mark.parametrize(
    ("role", "pages"),
    [
        ("superuser", {CHANGELIST: 200, QUEUES: 200, DASHBOARD: 200, PAUSES: 200, WORKERS: 200}),
        ("viewer", {CHANGELIST: 200, QUEUES: 200, DASHBOARD: 200, PAUSES: 200, WORKERS: 200}),
        ("pauser", {CHANGELIST: 403, QUEUES: 200, DASHBOARD: 200, PAUSES: 200, WORKERS: 200}),
    ],
)
def test_who_sees_which_page(role, pages, role_client, db):
    client = role_client(role)
    assert {url: client.get(url).status_code for url in pages} == pages


def test_staff_without_any_job_permission_sees_none_of_the_pages(db):
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.create_user("bare", is_staff=True))
    for url in (CHANGELIST, QUEUES, DASHBOARD, PAUSES, WORKERS):
        assert client.get(url).status_code == 403, url


# -- what a role sees of a job: view_job_input reveals, nothing else does ----------------------

REVEALS = frozenset({"superuser", "input_viewer"})
"""The roles that hold ``view_job_input`` (a superuser holds every permission)."""
UNKNOWN_SENTINEL = "UNKNOWN-NAME-SENTINEL-31c"
MESSAGE_SENTINEL = "MESSAGE-SENTINEL-31c"
TRACEBACK_SENTINEL = "TRACEBACK-SENTINEL-31c"
KEY_SENTINEL = "KEY-SENTINEL-31c"


def _failed_echoing_its_input(driver: JobDriver) -> uuid.UUID:
    """A failed ``tests.echo`` job (nothing declared sensitive) whose error echoes input."""
    job_id = enqueue(driver, name="tests.echo", **FIRST_IN_LINE)
    claimed = claim_one(driver)
    error = attempt_error(
        1,
        message=f"no customer {MESSAGE_SENTINEL}",
        traceback=f"Traceback (most recent call last):\n  {TRACEBACK_SENTINEL}\n",
    )
    assert driver.job_nack(
        job_id=job_id, claim_token=claimed.claim_token, action="fail", error=error
    )
    return job_id


def _listed(html: str) -> list[str]:
    return re.findall(r'href="/admin/ultimat3_jobs/job/([0-9a-f-]{36})/change/', html)


@pytest.mark.parametrize("role", sorted(SEES_JOBS))
def test_what_each_role_sees_of_a_job_follows_view_job_input(role, role_client, jobs_driver):
    unknown = enqueue(
        jobs_driver, name="gone.renamed_job", input_json=f'{{"note": "{UNKNOWN_SENTINEL}"}}'
    )
    failed = _failed_echoing_its_input(jobs_driver)
    keyed = enqueue(jobs_driver, name="tests.secret", idempotency_key=KEY_SENTINEL)
    client = role_client(role)
    reveal = role in REVEALS
    pages = {
        "unknown name": client.get(f"{CHANGELIST}{unknown}/change/").content.decode(),
        "failed attempts": client.get(f"{CHANGELIST}{failed}/change/").content.decode(),
        "sensitive key": client.get(f"{CHANGELIST}{keyed}/change/").content.decode(),
        "changelist": client.get(CHANGELIST).content.decode(),
        "search by id": client.get(CHANGELIST, {"q": str(keyed)}).content.decode(),
    }
    shown = {
        "unknown name": UNKNOWN_SENTINEL in pages["unknown name"],
        "message": MESSAGE_SENTINEL in pages["failed attempts"],
        "traceback": TRACEBACK_SENTINEL in pages["failed attempts"],
        "key": KEY_SENTINEL in pages["sensitive key"],
        # The changelist: the last error's message and the key, on hover.
        "message in list": MESSAGE_SENTINEL in pages["changelist"],
        "key in list": KEY_SENTINEL in pages["changelist"],
        "key in search": KEY_SENTINEL in pages["search by id"],
        "found by key": _listed(client.get(CHANGELIST, {"q": KEY_SENTINEL}).content.decode())
        == [str(keyed)],
    }
    assert shown == dict.fromkeys(shown, reveal)
    if not reveal:
        assert "[redacted]" in pages["unknown name"]
        assert "[redacted]" in pages["sensitive key"]
        assert "builtins.ValueError" in pages["failed attempts"]  # the class is never hidden


def csrf_token(client: Client, url: str) -> str:
    assert client.get(url).status_code == 200
    return client.cookies["csrftoken"].value


def test_an_action_post_without_csrf_token_is_refused(role_client, jobs_driver):
    job_id = job_in_state(jobs_driver, "queued")
    client = role_client("superuser", enforce_csrf_checks=True)
    data = {"action": "cancel_jobs", "_selected_action": str(job_id), "index": "0", "post": "yes"}
    assert client.post(CHANGELIST, data).status_code == 403
    assert state_of(jobs_driver, job_id) is JobState.QUEUED
    # The same POST with the token of the page goes through.
    data["csrfmiddlewaretoken"] = csrf_token(client, CHANGELIST)
    assert client.post(CHANGELIST, data).status_code == 302
    assert state_of(jobs_driver, job_id) is JobState.CANCELLED


def test_a_pause_post_without_csrf_token_is_refused(role_client, jobs_driver):
    client = role_client("superuser", enforce_csrf_checks=True)
    data = {"op": "pause", "scope": "queue", "target": "default"}
    assert client.post(QUEUES, data).status_code == 403
    assert not JobPause.objects.exists()
    data["csrfmiddlewaretoken"] = csrf_token(client, QUEUES)
    assert client.post(QUEUES, data).status_code == 302
    assert JobPause.objects.filter(scope="queue", target="default").exists()
