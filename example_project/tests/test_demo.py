"""The demo's own tests, written with ``ultimat3_jobs.testing`` as a project would write them.

They run with the package's test suite (its settings do not install the demo app: the demo's
jobs register when this module imports them, and the demo's URLs are set per test).
"""

from __future__ import annotations

from typing import Any

import django
import pytest
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend

from example_project.demo.jobs import send_welcome, sync_account
from ultimat3_jobs.testing import Jobs, assert_enqueued, run_enqueued

pytestmark = pytest.mark.django_db


LOCMEM = "django.core.mail.backends.locmem.EmailBackend"


def use_mail_backend(settings: Any, backend: str) -> None:
    # Django 6.1 configures mail through MAILERS and deprecates EMAIL_BACKEND.
    if django.VERSION >= (6, 1):
        settings.MAILERS = {"default": {"BACKEND": backend}}
    else:
        settings.EMAIL_BACKEND = backend


@pytest.fixture(autouse=True)
def demo_settings(settings: Any) -> None:
    settings.ROOT_URLCONF = "example_project.urls"
    use_mail_backend(settings, LOCMEM)


class UnreachableMailServer(BaseEmailBackend):
    """A mail backend whose server never answers."""

    def send_messages(self, email_messages: Any) -> int:
        raise ConnectionRefusedError("the mail server does not answer")


def test_the_page_enqueues_welcome_emails_and_they_are_sent(client: Any) -> None:
    response = client.post("/", {"count": 2})

    assert response.status_code == 302
    assert_enqueued(send_welcome, user_id=1, email="user1@example.com")
    assert_enqueued(send_welcome, options={"queue": "emails"}, user_id=2)
    summary = run_enqueued("emails")
    assert len(summary.completed) == 2, str(summary)
    assert sorted(message.to[0] for message in mail.outbox) == [
        "user1@example.com",
        "user2@example.com",
    ]


def test_the_sync_token_never_shows_in_a_failure_message(client: Any, jobs: Jobs) -> None:
    client.post("/", {"action": "sync", "account_id": 7})

    queued = jobs.assert_enqueued(sync_account, account_id=7)
    with pytest.raises(AssertionError) as failure:
        jobs.assert_enqueued(sync_account, account_id=8)
    assert queued.input["api_token"] not in str(failure.value)
    assert "'api_token': '[redacted]'" in str(failure.value)
    assert jobs.run().completed == (queued.id,)
    jobs.assert_not_enqueued(sync_account)


def test_with_eager_jobs_the_email_is_sent_when_the_view_commits(
    client: Any, jobs_eager: Any
) -> None:
    client.post("/", {"count": 1})

    assert [message.to for message in mail.outbox] == [["user1@example.com"]]
    assert jobs_eager.runs[0].attempts == 1


def test_a_welcome_email_is_retried_with_backoff_then_dead_lettered(
    jobs: Jobs, settings: Any
) -> None:
    use_mail_backend(settings, f"{__name__}.UnreachableMailServer")
    queued = send_welcome.enqueue(user_id=3, email="user3@example.com")

    for attempt in range(1, 5):
        summary = jobs.run()
        assert summary.retried == (queued.id,), (attempt, summary)
        assert "ConnectionRefusedError" in summary.errors[queued.id].error_class
        assert jobs.run().attempts == 0  # waits for its backoff
        jobs.travel(300)  # the job's backoff cap
    assert jobs.run().failed == (queued.id,)
    jobs.assert_not_enqueued(send_welcome)
