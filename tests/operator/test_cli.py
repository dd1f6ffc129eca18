"""``manage.py jobs``: every verb through call_command on PostgreSQL, ``--json`` parsed, refusals
with their codes, and input secrets that never print without ``--reveal``."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.testapp import jobs
from ultimat3_jobs import job
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.management.commands.jobs import Command
from ultimat3_jobs.models import Job
from ultimat3_jobs.types import AckItem, AttemptError, NackAction

pytestmark = pytest.mark.django_db

SECRET = "sk_live_do_not_print_me"
SSN = "078-05-1120"


@job(name="tests.operator.census", tenant="none", sensitive=["ssn"])
def census(ctx: Any, **input: Any) -> dict[str, Any]:
    """Declares a sensitive field whose name no default pattern catches."""
    return {"session_token": SECRET, "rows": 1}


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("jobs", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def run_json(*args: str) -> Any:
    return json.loads(run(*args, "--json"))


def refused(code: str, *args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    assert str(caught.value).startswith(f"{code}: "), str(caught.value)
    return str(caught.value)


def fail_now(job_id: uuid.UUID, *messages: str) -> None:
    """Claim the job and fail it for good after one retry per message but the last."""
    driver = get_driver()
    for number, message in enumerate(messages, 1):
        (claimed,) = driver.job_claim(
            queues=[Job.objects.get(id=job_id).queue], limit=1, worker_id="w-1", lease_seconds=30
        )
        assert claimed.id == job_id
        action: NackAction = "fail" if number == len(messages) else "retry"
        error = AttemptError(
            attempt=claimed.attempt,
            error_class="builtins.RuntimeError",
            message=message,
            traceback=f"Traceback (most recent call last):\n  File 'x.py', line {number}\n",
            worker_id="w-1",
        )
        assert driver.job_nack(
            job_id=job_id, claim_token=claimed.claim_token, action=action, error=error
        )


def complete_now(job_id: uuid.UUID, result: str = "null") -> None:
    driver = get_driver()
    (claimed,) = driver.job_claim(
        queues=[Job.objects.get(id=job_id).queue], limit=1, worker_id="w-1", lease_seconds=30
    )
    assert claimed.id == job_id
    driver.job_ack_many(
        items=[AckItem(job_id=job_id, claim_token=claimed.claim_token, result_json=result)]
    )


# -- list -------------------------------------------------------------------------------------


def test_list_with_no_jobs() -> None:
    assert run("list").strip() == "No jobs."
    assert run_json("list") == {"jobs": [], "next_cursor": None}


def test_list_pages_newest_first_and_prints_the_cursor() -> None:
    created = [jobs.echo.enqueue(n=n).id for n in range(5)]
    newest = [str(job_id) for job_id in reversed(created)]
    first = run_json("list", "--limit", "2")
    assert [row["id"] for row in first["jobs"]] == newest[:2]
    assert first["next_cursor"] == newest[1]
    second = run_json("list", "--limit", "2", "--after", first["next_cursor"])
    assert [row["id"] for row in second["jobs"]] == newest[2:4]
    last = run_json("list", "--limit", "2", "--after", f" {second['next_cursor']} ")
    assert ([row["id"] for row in last["jobs"]], last["next_cursor"]) == ([newest[4]], None)

    text = run("list", "--limit", "2")
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["ID", "NAME", "QUEUE", "STATE"]
    assert newest[0] in lines[1] and "tests.echo" in lines[1] and "queued" in lines[1]
    assert lines[-1] == f"next page: --after {newest[1]}"


def test_list_filters() -> None:
    failed = jobs.echo.enqueue(n=1).id
    fail_now(failed, "first", "second")
    math = jobs.add.enqueue(a=1, b=2, org="acme").id
    keyed = jobs.echo.using(idempotency_key="invoice-7").enqueue(n=2).id

    def listed(*args: str) -> list[str]:
        return [row["id"] for row in run_json("list", *args)["jobs"]]

    assert listed("--state", "failed") == [str(failed)]
    assert listed("--state", "queued,failed", "--queue", "math") == [str(math)]
    assert listed("--state", "queued", "--state", "failed") == [str(keyed), str(math), str(failed)]
    assert listed("--name", "tests.add") == [str(math)]
    assert listed("--tenant", "acme") == [str(math)]
    assert listed("--search", "invoice-7") == [str(keyed)]
    assert listed("--search", str(failed)) == [str(failed)]
    (row,) = run_json("list", "--state", "failed", "--reveal")["jobs"]
    assert (row["error_count"], row["last_error_class"], row["last_error_message"]) == (
        2,
        "builtins.RuntimeError",
        "second",
    )
    assert "second" in run("list", "--state", "failed", "--reveal")


@pytest.mark.parametrize(
    "args",
    [
        ("--limit", "0"),
        ("--limit", "501"),
        ("--after", "junk"),
        ("--after", str(uuid.uuid4())),
        ("--state", "lost"),
    ],
)
def test_list_refusals(args: tuple[str, ...]) -> None:
    refused("X_JOB_PAGE_INVALID", "list", *args)


# -- show -------------------------------------------------------------------------------------


def test_show_prints_the_row_with_errors_and_tracebacks() -> None:
    job_id = jobs.echo.using(priority=7).enqueue(n=3)
    fail_now(job_id.id, "went wrong", "went wrong again")
    text = run("show", str(job_id.id), "--reveal")
    assert f"id:               {job_id.id}" in text
    assert "state:            failed" in text
    assert "priority:         7" in text
    assert "errors: 2" in text
    assert "builtins.RuntimeError: went wrong again" in text
    assert "Traceback (most recent call last):" in text
    assert "File 'x.py', line 2" in text
    detail = run_json("show", str(job_id.id), "--reveal")
    assert detail["id"] == str(job_id.id)
    assert detail["state"] == "failed"
    assert [error["message"] for error in detail["errors"]] == ["went wrong", "went wrong again"]
    assert detail["errors"][0]["traceback"].startswith("Traceback")
    assert detail["input"] == {"n": 3}


def test_show_refuses_an_unknown_id() -> None:
    refused("X_JOB_NOT_FOUND", "show", str(uuid.uuid4()))
    refused("X_JOB_NOT_FOUND", "show", "not-an-id")


NESTED_INPUT = {
    "user": {"name": "ada", "Password": SECRET, "profile": {"card_number": SECRET}},
    "items": [{"api_key": SECRET, "sku": "A-1"}, {"Authorization": f"Bearer {SECRET}"}],
    "cookies": {"session": SECRET},
    "note": "fine",
}


def test_show_redacts_secrets_at_any_depth_unless_revealed() -> None:
    job_id = jobs.echo.enqueue(**NESTED_INPUT).id
    for args in [("show", str(job_id)), ("show", str(job_id), "--json")]:
        text = run(*args)
        assert SECRET not in text
        assert "[redacted]" in text
    detail = run_json("show", str(job_id))
    assert detail["redacted"] is True
    assert detail["input"] == {
        "user": {"name": "ada", "Password": "[redacted]", "profile": {"card_number": "[redacted]"}},
        "items": [{"api_key": "[redacted]", "sku": "A-1"}, {"Authorization": "[redacted]"}],
        "cookies": "[redacted]",
        "note": "fine",
    }
    revealed = run_json("show", str(job_id), "--reveal")
    assert revealed["redacted"] is False
    assert revealed["input"] == NESTED_INPUT
    assert SECRET in run("show", str(job_id), "--reveal")


def test_show_redacts_the_declared_sensitive_fields_and_the_result() -> None:
    job_id = census.enqueue(ssn=SSN, household=[{"ssn": SSN, "age": 3}], city="Paris").id
    complete_now(job_id, json.dumps({"session_token": SECRET, "rows": 1}))
    for args in [("show", str(job_id)), ("show", str(job_id), "--json")]:
        text = run(*args)
        assert SSN not in text
        assert SECRET not in text
    detail = run_json("show", str(job_id))
    assert detail["input"] == {
        "ssn": "[redacted]",
        "household": [{"ssn": "[redacted]", "age": 3}],
        "city": "Paris",
    }
    assert detail["result"] == {"session_token": "[redacted]", "rows": 1}
    revealed = run("show", str(job_id), "--reveal", "--json")
    assert SSN in revealed and SECRET in revealed


def test_secret_job_never_prints_its_token_in_list_or_show() -> None:
    job_id = jobs.secret.enqueue(account=1, api_token=SECRET).id
    assert SECRET not in run("list") + run("list", "--json")
    assert SECRET not in run("show", str(job_id)) + run("show", str(job_id), "--json")


# -- verbs on jobs ----------------------------------------------------------------------------


def test_cancel_one_and_many() -> None:
    one = jobs.echo.enqueue(n=1).id
    assert run("cancel", str(one)).strip() == f"job {one} cancelled"
    refused("X_JOB_NOT_CANCELLABLE", "cancel", str(one))
    refused("X_JOB_NOT_FOUND", "cancel", str(uuid.uuid4()))
    many = [jobs.echo.enqueue(n=n).id for n in range(2)]
    text = run("cancel", *map(str, many), str(one), "junk")
    assert text.strip() == "moved 2, remaining 2"
    assert set(Job.objects.filter(id__in=many).values_list("state", flat=True)) == {"cancelled"}


def test_cancel_keeps_the_reason_and_who_cancelled() -> None:
    one = jobs.echo.enqueue(n=1).id
    assert run("cancel", str(one), "--reason", "sent by mistake").strip() == f"job {one} cancelled"
    [entry] = Job.objects.get(id=one).errors
    assert entry["error_class"] == "ultimat3_jobs.Cancelled"
    assert entry["message"] == "sent by mistake"
    assert entry["cancelled_by"].startswith("cli")
    many = [jobs.echo.enqueue(n=n).id for n in range(2)]
    assert run("cancel", *map(str, many), "--reason", "batch").strip() == "moved 2, remaining 0"
    assert [Job.objects.get(id=i).errors[-1]["message"] for i in many] == ["batch", "batch"]
    refused(
        "X_CANCEL_REASON_INVALID", "cancel", str(jobs.echo.enqueue(n=3).id), "--reason", "x" * 1001
    )


def test_requeue_refuses_a_running_job_and_requeues_finished_ones() -> None:
    running = jobs.echo.enqueue(n=1).id
    get_driver().job_claim(queues=["default"], limit=1, worker_id="w", lease_seconds=30)
    refused("X_JOB_NOT_REQUEUEABLE", "requeue", str(running))
    failed = jobs.add.enqueue(a=1, b=1).id
    fail_now(failed, "boom")
    assert run("requeue", str(failed)).strip() == f"job {failed} requeued"
    assert Job.objects.get(id=failed).state == "queued"
    assert run("requeue", str(failed), str(running)).strip() == "moved 0, remaining 2"


def test_requeue_failed_of_a_name() -> None:
    failed = [jobs.add.enqueue(a=n, b=n).id for n in range(3)]
    for job_id in failed:
        fail_now(job_id, "boom")
    assert run("requeue", "--failed", "tests.add", "--limit", "2").strip() == (
        "moved 2, remaining 1"
    )
    assert run("requeue", "--failed", "tests.add").strip() == "moved 1, remaining 0"
    with pytest.raises(CommandError):
        run("requeue", "--failed", "tests.add", str(failed[0]))
    with pytest.raises(CommandError):
        run("requeue")


def test_promote_and_remove() -> None:
    later = jobs.echo.using(delay=3600).enqueue(n=1).id
    assert run("promote", str(later)).strip() == f"job {later} made due now"
    assert run("promote", str(later)).strip() == f"job {later} was already due; nothing to do"
    running = jobs.echo.enqueue(n=2).id
    driver = get_driver()
    claimed = driver.job_claim(queues=["default"], limit=2, worker_id="w", lease_seconds=30)
    assert {job.id for job in claimed} == {later, running}
    refused("X_JOB_NOT_PROMOTABLE", "promote", str(running))
    refused("X_JOB_NOT_REMOVABLE", "remove", str(running))
    run("cancel", str(running))
    assert run("remove", str(running)).strip() == f"job {running} removed"
    assert not Job.objects.filter(id=running).exists()
    refused("X_JOB_NOT_FOUND", "remove", str(running))


# -- pauses -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "scope", "target"),
    [
        ("--queue", "queue", "emails"),
        ("--job", "job", "tests.echo"),
        ("--task", "task", "t.x"),
        ("--cron", "task", "t.y"),
    ],
)
def test_pause_and_resume(option: str, scope: str, target: str) -> None:
    assert run("pause", option, target, "--reason", "deploy").strip() == f"{scope} {target} paused"
    assert run("pause", option, target).strip() == f"{scope} {target} was already paused"
    (pause,) = get_driver().pause_list()
    assert (pause.scope, pause.target, pause.reason) == (scope, target, "deploy")
    assert pause.paused_by.startswith("cli")
    assert run("resume", option, target).strip() == f"{scope} {target} resumed"
    assert run("resume", option, target).strip() == f"{scope} {target} was not paused"


def test_pause_needs_exactly_one_target() -> None:
    with pytest.raises(CommandError):
        run("pause")
    with pytest.raises(CommandError):
        run("pause", "--queue", "a", "--job", "b")
    refused("X_PAUSE_INVALID", "pause", "--queue", "")


# -- stats and cron ---------------------------------------------------------------------------


def test_stats() -> None:
    queued = jobs.echo.enqueue(n=1).id
    done = jobs.add.enqueue(a=1, b=2).id
    complete_now(done, "3")
    failed = jobs.add.enqueue(a=2, b=2).id
    fail_now(failed, "boom")
    jobs.add.using(delay=600).enqueue(a=3, b=3)
    Job.objects.filter(id=queued).update(
        run_at=Job.objects.get(id=queued).run_at.replace(year=2020)
    )
    run("pause", "--queue", "math", "--reason", "deploy")

    found = run_json("stats")
    queues = {row["queue"]: row for row in found["queues"]}
    assert set(queues) == {"default", "math"}
    assert queues["default"]["depth"] == {
        "queued": 1,
        "running": 0,
        "completed": 0,
        "failed": 0,
        "cancelled": 0,
    }
    assert queues["default"]["oldest_ready_seconds"] > 86400 * 365
    assert queues["math"]["depth"]["completed"] == 1
    assert queues["math"]["depth"]["failed"] == 1
    assert queues["math"]["depth"]["queued"] == 1
    assert queues["math"]["oldest_ready_seconds"] is None
    assert (queues["math"]["paused"], queues["default"]["paused"]) == (True, False)
    assert queues["math"]["at_least"] == []
    assert [(p["scope"], p["target"], p["reason"]) for p in found["pauses"]] == [
        ("queue", "math", "deploy")
    ]
    counters = {row["name"]: row for row in found["counters"]["names"]}
    assert counters["tests.add"]["completed"] == 1
    assert counters["tests.add"]["dead"] == 1

    text = run("stats")
    lines = text.splitlines()
    assert lines[0].split() == [
        "QUEUE",
        "QUEUED",
        "RUNNING",
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "OLDEST",
        "READY",
        "PAUSED",
    ]
    assert lines[1].split()[:6] == ["default", "1", "0", "0", "0", "0"]
    oldest, paused = lines[1].split()[-2:]
    assert (oldest[-1], paused) == ("d", "no")  # over two days: shown in days
    assert lines[2].split() == ["math", "1", "0", "1", "1", "0", "-", "yes"]
    assert lines[3].startswith("paused queue math by cli") and lines[3].endswith(": deploy")
    assert lines[lines.index("Settled in the last hour:") + 2].split() == [
        "tests.add",
        "1",
        "0",
        "1",
        "0",
        "0",
        "0",
    ]


def test_stats_with_nothing() -> None:
    text = run("stats")
    assert "No queue holds a job." in text
    assert "Nothing settled in the last hour." in text
    assert run_json("stats")["queues"] == []


def test_cron_lists_cron_jobs() -> None:
    names = [row["name"] for row in run_json("cron")]
    assert "tests.every_second" in names
    assert "NAME" in run("cron")


def test_tasks_is_a_deprecated_alias_of_cron() -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command("jobs", "tasks", "--json", stdout=out, stderr=err)
    assert [row["name"] for row in json.loads(out.getvalue())] == [
        row["name"] for row in run_json("cron")
    ]
    assert err.getvalue().strip() == "'jobs tasks' is deprecated: use 'jobs cron'"


# -- exit status ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_refusal_prints_its_code_and_exits_non_zero(capsys: pytest.CaptureFixture[str]) -> None:
    missing = uuid.uuid4()
    with pytest.raises(SystemExit) as caught:
        Command().run_from_argv(["manage.py", "jobs", "--skip-checks", "show", str(missing)])
    assert caught.value.code == 1
    err = capsys.readouterr().err
    assert f"X_JOB_NOT_FOUND: no job has id {missing}" in err
