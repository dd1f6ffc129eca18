"""A job's page: input redacted unless the user may see it (whole for a job name this process
does not know), one block per failed attempt (its message and traceback only for a user who may
see input), the key of a sensitive job masked, progress, timings, result; its buttons run the
actions on that job, pause or resume as its name is."""

from __future__ import annotations

import re

import pytest

from tests.admin.conftest import job_failed_twice, job_in_state
from tests.drivers.support import claim_one, enqueue, state_of
from tests.factories import JobFactory
from ultimat3_jobs.types import AckItem, JobState

CHANGELIST = "/admin/ultimat3_jobs/job/"
SENTINEL = "sk_live_SENTINEL_4f9a1c"
PATTERN_SENTINEL = "hunter2-SENTINEL"
SECRET_INPUT = (
    '{"account": 7, "api_token": "' + SENTINEL + '", '
    '"nested": [{"password": "' + PATTERN_SENTINEL + '"}]}'
)


def page(client, job_id) -> str:
    response = client.get(f"{CHANGELIST}{job_id}/change/")
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def secret_job(jobs_driver):
    """A ``tests.secret`` job (``sensitive=["api_token"]``) holding both sentinels, failed twice
    so its page shows everything."""
    return job_failed_twice(jobs_driver, name="tests.secret", input_json=SECRET_INPUT)


@pytest.mark.parametrize("role", ["viewer", "operator", "runner", "pauser_viewer"])
def test_secrets_never_reach_a_user_without_view_job_input(role, role_client, secret_job):
    client = role_client(role)
    html = page(client, secret_job)
    assert SENTINEL not in html
    assert PATTERN_SENTINEL not in html
    assert "[redacted]" in html
    assert "&quot;account&quot;: 7" in html  # the rest of the input is shown
    assert "api_token" in html  # named as redacted
    for url in (
        CHANGELIST,
        f"{CHANGELIST}?q={secret_job}",
        f"{CHANGELIST}{secret_job}/history/",
        f"{CHANGELIST}queues/",
        f"{CHANGELIST}dashboard/",
    ):
        body = client.get(url).content.decode()
        assert SENTINEL not in body, url
        assert PATTERN_SENTINEL not in body, url


def test_the_remove_confirmation_shows_no_input(role_client, secret_job):
    response = role_client("runner").post(
        CHANGELIST, {"action": "remove_jobs", "_selected_action": str(secret_job), "index": "0"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Yes, remove them" in html
    assert SENTINEL not in html


@pytest.mark.parametrize("role", ["superuser", "input_viewer"])
def test_input_is_shown_to_a_user_with_view_job_input(role, role_client, secret_job):
    html = page(role_client(role), secret_job)
    assert SENTINEL in html
    assert PATTERN_SENTINEL in html
    assert "Shown in full" in html
    # The changelist never shows input, whoever asks.
    assert SENTINEL not in role_client(role).get(CHANGELIST).content.decode()


def test_one_block_per_failed_attempt_with_its_traceback(role_client, secret_job):
    html = page(role_client("input_viewer"), secret_job)
    assert "Failed attempts (2)" in html
    assert html.count('class="u3j-attempt-error"') == 2
    assert "Attempt 1: builtins.ValueError" in html
    assert "Attempt 2: builtins.ValueError" in html
    assert "FIRST-TB" in html and "SECOND-TB" in html
    assert html.index("FIRST-TB") < html.index("SECOND-TB")
    assert "2 of 3" in html  # attempt of max_attempts
    assert "boom 1" in html and "boom 2" in html
    assert "withheld" not in html


@pytest.mark.parametrize("role", ["viewer", "operator", "runner", "pauser_viewer"])
def test_messages_and_tracebacks_are_withheld_without_view_job_input(
    role, role_client, jobs_driver
):
    # A job that declares nothing sensitive: its exception messages may still echo its input.
    job_id = job_failed_twice(jobs_driver, name="tests.echo")
    html = page(role_client(role), job_id)
    assert "Failed attempts (2)" in html
    assert html.count('class="u3j-attempt-error"') == 2
    assert "Attempt 1: builtins.ValueError" in html  # the class, attempt and worker are shown
    assert "worker worker-1" in html
    assert "boom 1" not in html and "boom 2" not in html
    assert "FIRST-TB" not in html and "SECOND-TB" not in html
    assert 'id="job-errors-withheld"' in html


def test_progress_timings_and_result(role_client, jobs_driver):
    job_id = enqueue(jobs_driver, name="tests.progress")
    claimed = claim_one(jobs_driver)
    assert claimed.id == job_id
    assert jobs_driver.job_progress(
        job_id=job_id,
        claim_token=claimed.claim_token,
        progress_json='{"current": 3, "total": 4, "stage": "upload"}',
    )
    client = role_client("viewer")
    html = page(client, job_id)
    assert '<progress max="100" value="75">' in html
    assert "&quot;stage&quot;: &quot;upload&quot;" in html
    for label in ("created", "due (run_at)", "started", "finished", "lease ends"):
        assert f'<th scope="row">{label}</th>' in html
    assert "No attempt has failed." in html
    lease_row = html.split('<th scope="row">lease ends</th>')[1].split("</tr>")[0]
    assert lease_row.strip() != "<td>-</td>"  # running: the lease is shown
    assert jobs_driver.job_ack_many(
        items=[AckItem(job_id=job_id, claim_token=claimed.claim_token, result_json='{"n": 41}')]
    ) == {job_id}
    html = page(client, job_id)
    assert "&quot;n&quot;: 41" in html
    assert "completed" in html


def test_a_result_is_redacted_like_input(role_client, jobs_driver):
    job_id = JobFactory(completed=True, result={"token": SENTINEL}).id
    html = page(role_client("viewer"), job_id)
    assert SENTINEL not in html
    assert SENTINEL in page(role_client("superuser"), job_id)


def test_a_missing_or_malformed_job_id_goes_back_to_the_list(role_client, db):
    client = role_client("superuser")
    for job_id in ("01a00000-0000-7000-8000-000000000000", "not-a-uuid"):
        response = client.get(f"{CHANGELIST}{job_id}/change/")
        assert response.status_code == 302
        assert response["Location"] == "/admin/"


def test_the_buttons_follow_the_state(role_client, jobs_driver):
    client = role_client("superuser")

    def buttons(job_id) -> set[str]:
        html = page(client, job_id)
        return {
            name
            for name in (
                "cancel_jobs",
                "requeue_jobs",
                "promote_jobs",
                "remove_jobs",
            )
            if f'name="job_action" value="{name}"' in html
        }

    assert buttons(job_in_state(jobs_driver, "queued")) == {
        "cancel_jobs",
        "promote_jobs",
        "remove_jobs",
    }
    assert buttons(job_in_state(jobs_driver, "running")) == {"cancel_jobs"}
    assert buttons(job_in_state(jobs_driver, "failed")) == {"requeue_jobs", "remove_jobs"}


def test_a_button_acts_and_comes_back_to_the_job(role_client, jobs_driver):
    job_id = job_in_state(jobs_driver, "failed")
    response = role_client("operator").post(
        CHANGELIST,
        {
            "action": "requeue_jobs",
            "_selected_action": str(job_id),
            "index": "0",
            "_return_to_job": "1",
        },
        follow=True,
    )
    assert response.redirect_chain[-1][0] == f"{CHANGELIST}{job_id}/change/"
    assert "Requeued 1 job." in response.content.decode()
    assert state_of(jobs_driver, job_id) is JobState.QUEUED


def test_cancel_asks_for_a_reason_then_keeps_it_and_comes_back_to_the_job(role_client, jobs_driver):
    job_id = job_in_state(jobs_driver, "running")
    client = role_client("operator")
    button = {
        "action": "cancel_jobs",
        "_selected_action": str(job_id),
        "index": "0",
        "_return_to_job": "1",
    }
    asked = client.post(CHANGELIST, button)
    assert asked.status_code == 200
    html = asked.content.decode()
    assert "Cancel jobs?" in html and 'name="reason"' in html
    assert 'name="_return_to_job" value="1"' in html
    assert state_of(jobs_driver, job_id) is JobState.RUNNING  # nothing happens before the answer
    confirmed = {
        "action": "cancel_jobs",
        "_selected_action": str(job_id),
        "post": "yes",
        "_return_to_job": "1",
        "reason": "  the customer asked twice  ",
    }
    response = client.post(CHANGELIST, confirmed, follow=True)
    assert response.redirect_chain[-1][0] == f"{CHANGELIST}{job_id}/change/"
    assert "Cancelled 1 job." in response.content.decode()
    record = jobs_driver.job_get(job_id=job_id)
    assert record.state is JobState.CANCELLED
    entry = record.errors[-1]
    assert entry["error_class"] == "ultimat3_jobs.Cancelled"
    assert entry["message"] == "the customer asked twice"
    assert entry["cancelled_by"] == "admin:operator"
    assert entry["attempt"] == 1


def test_a_cancel_reason_too_long_is_asked_again_and_nothing_moves(role_client, jobs_driver):
    job_id = job_in_state(jobs_driver, "queued")
    response = role_client("operator").post(
        CHANGELIST,
        {
            "action": "cancel_jobs",
            "_selected_action": str(job_id),
            "post": "yes",
            "reason": "x" * 1001,
        },
    )
    assert response.status_code == 200
    assert "Please correct the reason below." in response.content.decode()
    assert state_of(jobs_driver, job_id) is JobState.QUEUED


def test_bulk_answers_moved_and_remaining(role_client, jobs_driver):
    queued = [job_in_state(jobs_driver, "queued") for _ in range(2)]
    done = job_in_state(jobs_driver, "completed")
    response = role_client("operator").post(
        CHANGELIST,
        {
            "action": "cancel_jobs",
            "_selected_action": [*map(str, queued), str(done)],
            "index": 0,
            "post": "yes",
        },
        follow=True,
    )
    html = response.content.decode()
    assert "Cancelled 2 jobs. 1 job left as it was (already finished, or gone)." in html
    failed = [job_in_state(jobs_driver, "failed", name="tests.flaky") for _ in range(3)]
    response = role_client("operator").post(
        CHANGELIST,
        {"action": "retry_failed_of_name", "_selected_action": str(failed[0]), "index": 0},
        follow=True,
    )
    assert "Requeued 3 failed jobs of tests.flaky; 0 still failed." in response.content.decode()
    assert {state_of(jobs_driver, job_id) for job_id in failed} == {JobState.QUEUED}


def test_remove_asks_first(role_client, jobs_driver):
    job_id = job_in_state(jobs_driver, "completed")
    client = role_client("runner")
    data = {"action": "remove_jobs", "_selected_action": str(job_id), "index": "0"}
    response = client.post(CHANGELIST, data)
    assert response.status_code == 200
    assert state_of(jobs_driver, job_id) is JobState.COMPLETED
    confirmed = client.post(
        CHANGELIST,
        {"action": "remove_jobs", "_selected_action": str(job_id), "post": "yes"},
        follow=True,
    )
    assert "Removed 1 job." in confirmed.content.decode()
    assert state_of(jobs_driver, job_id) is None


UNKNOWN_NAME = "billing.renamed_long_ago"
INPUT_SENTINEL = "INPUT-SENTINEL-7a1f"
PROGRESS_SENTINEL = "PROGRESS-SENTINEL-7a1f"
RESULT_SENTINEL = "RESULT-SENTINEL-7a1f"


@pytest.fixture
def unknown_job(db):
    """A completed job of a name no ``jobs.py`` of this process declares, whose input,
    progress and result hold values under keys no pattern takes for secret."""
    return JobFactory(
        completed=True,
        name=UNKNOWN_NAME,
        input={"customer": INPUT_SENTINEL, "nested": {"amount": 12}},
        progress={"current": 1, "total": 2, "note": PROGRESS_SENTINEL},
        result={"receipt": RESULT_SENTINEL},
    ).id


@pytest.mark.parametrize("role", ["viewer", "operator", "runner", "pauser_viewer"])
def test_a_job_name_this_process_does_not_know_is_redacted_whole(role, role_client, unknown_job):
    html = page(role_client(role), unknown_job)
    for sentinel in (INPUT_SENTINEL, PROGRESS_SENTINEL, RESULT_SENTINEL):
        assert sentinel not in html
    assert "amount" not in html and "receipt" not in html  # not even the keys
    assert 'id="job-unknown-name"' in html
    assert html.count("&quot;[redacted]&quot;") == 3  # input, progress, result
    assert "<progress" not in html  # a redacted progress draws no bar


@pytest.mark.parametrize("role", ["superuser", "input_viewer"])
def test_a_job_name_this_process_does_not_know_is_shown_with_view_job_input(
    role, role_client, unknown_job
):
    html = page(role_client(role), unknown_job)
    for sentinel in (INPUT_SENTINEL, PROGRESS_SENTINEL, RESULT_SENTINEL):
        assert sentinel in html
    assert 'id="job-unknown-name"' not in html


KEY_SENTINEL = "customer-4417-card-KEY-SENTINEL"


def listed_ids(html: str) -> list[str]:
    """The jobs a changelist lists (by their links: a viewer has no checkboxes)."""
    return re.findall(r'href="/admin/ultimat3_jobs/job/([0-9a-f-]{36})/change/', html)


@pytest.mark.parametrize("role", ["viewer", "operator", "runner", "pauser_viewer"])
def test_the_key_of_a_sensitive_job_is_masked(role, role_client, jobs_driver):
    job_id = enqueue(
        jobs_driver,
        name="tests.secret",
        idempotency_key=KEY_SENTINEL,
        input_json='{"account": 1, "api_token": "x"}',
    )
    open_key = enqueue(jobs_driver, name="tests.echo", idempotency_key="plain-key-1")
    client = role_client(role)
    html = page(client, job_id)
    assert KEY_SENTINEL not in html
    key_row = html.split('<th scope="row">idempotency key</th>')[1].split("</tr>")[0]
    assert "[redacted]" in key_row
    for url in (CHANGELIST, f"{CHANGELIST}?q={job_id}", f"{CHANGELIST}?name=tests.secret"):
        body = client.get(url).content.decode()
        assert str(job_id) in body, url
        assert KEY_SENTINEL not in body, url
    # A search by the masked key finds nothing: it would tell the key to whoever guessed it.
    assert listed_ids(client.get(CHANGELIST, {"q": KEY_SENTINEL}).content.decode()) == []
    # The key of a job that declares nothing sensitive is shown, and found.
    assert "plain-key-1" in page(client, open_key)
    found = client.get(CHANGELIST, {"q": "plain-key-1"}).content.decode()
    assert listed_ids(found) == [str(open_key)]


@pytest.mark.parametrize("role", ["superuser", "input_viewer"])
def test_the_key_of_a_sensitive_job_is_shown_with_view_job_input(role, role_client, jobs_driver):
    job_id = enqueue(jobs_driver, name="tests.secret", idempotency_key=KEY_SENTINEL)
    client = role_client(role)
    assert KEY_SENTINEL in page(client, job_id)
    assert KEY_SENTINEL in client.get(CHANGELIST).content.decode()  # on hover over the id
    assert listed_ids(client.get(CHANGELIST, {"q": KEY_SENTINEL}).content.decode()) == [str(job_id)]


@pytest.mark.parametrize("role", ["superuser", "pauser_viewer"])
def test_the_page_offers_pause_or_resume_never_both(role, role_client, jobs_driver):
    job_id = enqueue(jobs_driver, name="tests.noop")
    client = role_client(role)
    html = page(client, job_id)
    assert "Pause this job name" in html
    assert "Resume this job name" not in html
    jobs_driver.pause_add(scope="job", target="tests.noop")
    html = page(client, job_id)
    assert "Resume this job name" in html
    assert "Pause this job name" not in html
    # Another name's pause changes nothing for this one.
    jobs_driver.pause_remove(scope="job", target="tests.noop")
    jobs_driver.pause_add(scope="job", target="tests.echo")
    html = page(client, job_id)
    assert "Pause this job name" in html
    assert "Resume this job name" not in html


def test_pause_and_resume_of_a_name_say_whether_each_changed(role_client, jobs_driver):
    job_id = enqueue(jobs_driver, name="tests.noop")
    client = role_client("pauser_viewer")

    def act(action: str) -> str:
        data = {"action": action, "_selected_action": str(job_id), "index": "0"}
        return client.post(CHANGELIST, data, follow=True).content.decode()

    assert "Paused job name tests.noop." in act("pause_job_names")
    assert [(p.scope, p.target) for p in jobs_driver.pause_list()] == [("job", "tests.noop")]
    assert "Job name tests.noop was already paused." in act("pause_job_names")
    assert "Resumed job name tests.noop." in act("resume_job_names")
    assert jobs_driver.pause_list() == []
    assert "Job name tests.noop was not paused." in act("resume_job_names")


def test_run_now_reports_what_was_already_due(role_client, jobs_driver):
    due = job_in_state(jobs_driver, "queued")
    response = role_client("superuser").post(
        CHANGELIST,
        {"action": "promote_jobs", "_selected_action": str(due), "index": "0"},
        follow=True,
    )
    html = response.content.decode()
    assert "Made due now 0 jobs. 1 job left as it was (already due, not queued, or gone)." in html


def test_a_durable_job_lists_its_steps_redacted_like_input(role_client, jobs_driver):
    job_id = enqueue(
        jobs_driver, name="tests.secret", input_json='{"account": 1, "api_token": "x"}'
    )
    claimed = claim_one(jobs_driver)
    assert jobs_driver.step_put(
        job_id=job_id,
        claim_token=claimed.claim_token,
        name="charge",
        seq=1,
        kind="run",
        status="done",
        output_json='{"api_token": "' + SENTINEL + '", "amount": 3}',
    )
    assert jobs_driver.step_wait(
        job_id=job_id,
        claim_token=claimed.claim_token,
        name="paid",
        seq=2,
        kind="event",
        event="order.paid",
        key="o-1",
        seconds=60,
    )
    html = page(role_client("viewer"), job_id)
    steps = html.split('id="job-steps"')[1].split('id="job-errors"')[0]
    assert "charge" in steps and "done" in steps and "&quot;amount&quot;: 3" in steps
    assert SENTINEL not in html
    assert "waits for event order.paid (key o-1) until" in steps
    assert SENTINEL in page(role_client("superuser"), job_id)


def test_a_job_without_steps_shows_no_steps_section(role_client, jobs_driver):
    job_id = enqueue(jobs_driver)
    assert 'id="job-steps"' not in page(role_client("viewer"), job_id)
