"""A secret in a sensitive input field never reaches the logs: not at enqueue, not while a worker
runs the job, not when an operator lists or shows it without the permission. ``manage.py jobs``
follows the admin's rule: without ``--reveal``, a job name this process does not know is
redacted whole, error messages and tracebacks are withheld, and the idempotency key of a
sensitive job is masked."""

from __future__ import annotations

import json
import logging
import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from tests.drivers.support import attempt_error, claim_one
from tests.factories import JobFactory
from tests.testapp.jobs import echo, secret
from tests.worker.conftest import make_worker, wait_for
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.models import Job

__all__ = ["make_worker"]


@pytest.mark.django_db(transaction=True)
def test_a_sensitive_value_never_reaches_the_logs(make_worker, caplog) -> None:
    sentinel = f"S3CR3T-{uuid.uuid4()}"
    caplog.set_level(logging.DEBUG)
    result = secret.enqueue(account=7, api_token=sentinel)
    make_worker()
    wait_for(lambda: Job.objects.filter(id=result.id, state="completed").exists(), what="ran")
    # A dead letter to show: the same job again, moved to failed by hand.
    kept = secret.enqueue(account=8, api_token=sentinel)
    Job.objects.filter(id=kept.id).update(state="failed")
    out = StringIO()
    call_command("jobs", "show", str(kept.id), stdout=out)
    call_command("jobs", "list", "--json", stdout=out)
    assert sentinel not in out.getvalue()
    logged = "\n".join(f"{record.getMessage()} {record.__dict__}" for record in caplog.records)
    assert "jobs.worker.started" in logged, "the worker's logs were captured"
    assert sentinel not in logged


def jobs_command(*args: str) -> str:
    out = StringIO()
    call_command("jobs", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


SENTINEL = f"S3CR3T-{uuid.uuid4()}"


@pytest.mark.django_db
def test_a_job_name_this_process_does_not_know_is_redacted_whole() -> None:
    # A job enqueued under a name no jobs.py of this process declares (renamed since): its
    # sensitive fields cannot be known, so nothing of its input, progress or result shows.
    job_id = JobFactory(
        name="billing.old_name",
        input={"note": SENTINEL},
        progress={"step": SENTINEL},
        result={"receipt": SENTINEL},
    ).id
    text = jobs_command("show", str(job_id))
    assert SENTINEL not in text
    assert "note" not in text and "receipt" not in text
    detail = json.loads(jobs_command("show", str(job_id), "--json"))
    assert (detail["input"], detail["progress"], detail["result"]) == ("[redacted]",) * 3
    assert detail["redacted"] is True
    revealed = json.loads(jobs_command("show", str(job_id), "--json", "--reveal"))
    assert revealed["input"] == {"note": SENTINEL}
    assert revealed["result"] == {"receipt": SENTINEL}
    assert SENTINEL in jobs_command("show", str(job_id), "--reveal")


@pytest.mark.django_db
def test_error_messages_and_tracebacks_need_reveal() -> None:
    # tests.echo declares nothing sensitive, yet its exception message echoes its input.
    driver = get_driver()
    job_id = echo.enqueue(n=1).id
    claimed = claim_one(driver)
    assert claimed.id == job_id
    error = attempt_error(
        1,
        error_class="billing.CardDeclined",
        message=f"card {SENTINEL} declined",
        traceback=f"Traceback (most recent call last):\n  {SENTINEL}\n",
    )
    assert driver.job_nack(
        job_id=job_id, claim_token=claimed.claim_token, action="fail", error=error
    )
    hidden = "".join(
        jobs_command(*args)
        for args in [
            ("show", str(job_id)),
            ("show", str(job_id), "--json"),
            ("list",),
            ("list", "--json"),
        ]
    )
    assert SENTINEL not in hidden
    assert "billing.CardDeclined" in jobs_command("show", str(job_id))
    assert "billing.CardDeclined: [redacted]" in jobs_command("list")
    (entry,) = json.loads(jobs_command("show", str(job_id), "--json"))["errors"]
    assert (entry["error_class"], entry["message"], entry["traceback"]) == (
        "billing.CardDeclined",
        "[redacted]",
        "[redacted]",
    )
    (row,) = json.loads(jobs_command("list", "--json"))["jobs"]
    assert row["last_error_message"] == "[redacted]"
    shown = jobs_command("show", str(job_id), "--reveal") + jobs_command("list", "--reveal")
    assert f"card {SENTINEL} declined" in shown
    assert shown.count(SENTINEL) == 3  # the message and the traceback, then the list's message


@pytest.mark.django_db
def test_the_idempotency_key_of_a_sensitive_job_is_masked() -> None:
    masked = secret.using(idempotency_key=SENTINEL).enqueue(account=1, api_token="x").id
    plain = echo.using(idempotency_key="plain-7").enqueue(n=1).id
    for args in [("show", str(masked)), ("show", str(masked), "--json"), ("list",)]:
        assert SENTINEL not in jobs_command(*args), args
    listed = {row["id"]: row for row in json.loads(jobs_command("list", "--json"))["jobs"]}
    assert listed[str(masked)]["idempotency_key"] == "[redacted]"
    assert listed[str(plain)]["idempotency_key"] == "plain-7"
    detail = json.loads(jobs_command("show", str(masked), "--json"))
    assert detail["idempotency_key"] == "[redacted]"
    revealed = json.loads(jobs_command("show", str(masked), "--json", "--reveal"))
    assert revealed["idempotency_key"] == SENTINEL
    revealed_list = json.loads(jobs_command("list", "--json", "--reveal"))["jobs"]
    assert {row["idempotency_key"] for row in revealed_list} == {SENTINEL, "plain-7"}


def test_the_rule_in_one_place() -> None:
    from ultimat3_jobs.operator.redaction import disclosure, key_searchable_names

    unknown = disclosure("not.declared.here", reveal=False)
    assert (unknown.known, unknown.payload_whole, unknown.key_shown) == (False, True, False)
    assert unknown.payload({"a": 1}) == "[redacted]"
    assert unknown.payload(None) is None  # nothing stored tells nothing
    sensitive = disclosure("tests.secret", reveal=False)
    assert sensitive.payload({"api_token": "t", "account": 1}) == {
        "api_token": "[redacted]",
        "account": 1,
    }
    assert sensitive.idempotency_key("k") == "[redacted]"
    assert sensitive.idempotency_key(None) is None
    plain = disclosure("tests.echo", reveal=False)
    assert plain.idempotency_key("k") == "k"
    error = {"attempt": 1, "error_class": "E", "message": "m", "traceback": "t"}
    assert plain.error(error) == {**error, "message": "[redacted]", "traceback": "[redacted]"}
    assert error["message"] == "m"  # the stored value is not changed
    for name in ("not.declared.here", "tests.secret", "tests.echo"):
        revealed = disclosure(name, reveal=True)
        assert revealed.payload({"api_token": "t"}) == {"api_token": "t"}
        assert revealed.error(error) == error
        assert revealed.idempotency_key("k") == "k"
    names = key_searchable_names(reveal=False)
    assert names is not None and "tests.echo" in names and "tests.secret" not in names
    assert key_searchable_names(reveal=True) is None
