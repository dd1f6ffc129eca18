"""The enqueue path end to end on PostgreSQL: answers, options, and one refusal per kind of bad
input, each leaving no row behind."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import transaction
from django.test import override_settings

import ultimat3_jobs
from tests.testapp.jobs import add, echo, noop, secret, tenant_strict
from ultimat3_jobs.errors import (
    EnqueueRefused,
    JobDuplicate,
    JobInputInvalid,
    JobOptionInvalid,
    JobPriorityInvalid,
    JobQueueInvalid,
    JobRunAtInvalid,
    JobUnknown,
)
from ultimat3_jobs.models import Job

pytestmark = pytest.mark.django_db


def test_enqueue_answers_created_with_a_uuid7_id_and_writes_the_row() -> None:
    result = add.enqueue(a=1, b=2, org="acme")
    assert result.status == "created"
    assert result.created and not result.deduped
    assert result.id.version == 7
    row = Job.objects.get(id=result.id)
    assert (row.name, row.queue, row.state, row.tenant_id) == (
        "tests.add",
        "math",
        "queued",
        "acme",
    )
    assert row.input == {"a": 1, "b": 2, "org": "acme"}
    assert row.max_attempts == 3
    assert row.run_at <= row.created_at + timedelta(seconds=1)


def test_using_sets_per_call_options() -> None:
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    result = echo.using(run_at=when, priority=-5, queue="other", enqueued_by="user:7").enqueue(x=1)
    row = Job.objects.get(id=result.id)
    assert (row.run_at, row.priority, row.queue, row.enqueued_by) == (when, -5, "other", "user:7")
    assert row.max_attempts == 4


def test_delay_is_counted_from_database_time() -> None:
    result = noop.using(delay=timedelta(minutes=10)).enqueue()
    row = Job.objects.get(id=result.id)
    assert (
        timedelta(minutes=9, seconds=59)
        < row.run_at - row.created_at
        < timedelta(minutes=10, seconds=1)
    )


def test_idempotency_key_dedupes_to_the_live_job() -> None:
    first = echo.using(idempotency_key="order-1").enqueue(n=1)
    again = echo.using(idempotency_key="order-1").enqueue(n=2)
    assert again.status == "deduped"
    assert again.id == first.id
    assert Job.objects.filter(name="tests.echo").count() == 1
    with pytest.raises(JobDuplicate) as caught:
        echo.using(idempotency_key="order-1", on_conflict="error").enqueue(n=3)
    assert caught.value.code == "X_JOB_DUPLICATE"
    assert caught.value.existing_id == first.id
    assert Job.objects.filter(name="tests.echo").count() == 1


def test_a_finished_job_frees_its_key() -> None:
    first = echo.using(idempotency_key="k").enqueue()
    Job.objects.filter(id=first.id).update(state="completed")
    second = echo.using(idempotency_key="k").enqueue()
    assert second.created and second.id != first.id


def test_enqueue_many_answers_in_order_and_dedupes() -> None:
    echo.using(idempotency_key="x").enqueue()
    results = add.enqueue_many([{"a": i, "b": i} for i in range(2500)])
    assert len(results) == 2500
    assert all(r.created for r in results)
    assert [r.id for r in results] == sorted(r.id for r in results)
    assert Job.objects.filter(name="tests.add").count() == 2500


def test_enqueue_by_name() -> None:
    result = ultimat3_jobs.enqueue("tests.add", {"a": 1, "b": 2}, priority=3)
    assert Job.objects.get(id=result.id).priority == 3


def test_enqueue_joins_the_callers_transaction() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        noop.enqueue()
        raise RuntimeError("roll back")
    assert not Job.objects.exists()
    with transaction.atomic():
        kept = noop.enqueue()
    assert Job.objects.filter(id=kept.id).exists()


def test_input_over_the_configured_cap_is_refused() -> None:
    with override_settings(ULTIMAT3_JOBS={"DEFAULT_TENANT": "none", "INPUT_MAX_BYTES": 64}):
        echo.enqueue(s="x" * 40)
        with pytest.raises(JobInputInvalid) as caught:
            echo.enqueue(s="x" * 80)
    assert caught.value.rule == "max-bytes"
    assert Job.objects.count() == 1


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


Enqueue = Callable[[], object]

REFUSALS: list[tuple[str, Enqueue, type[EnqueueRefused], str]] = [
    # (case, the call, the error class, the field it must name)
    ("set", lambda: echo.enqueue(tags={"a"}), JobInputInvalid, "input.tags"),
    ("bytes", lambda: echo.enqueue(blob=b"\x00\x01"), JobInputInvalid, "input.blob"),
    ("object", lambda: echo.enqueue(who=object()), JobInputInvalid, "input.who"),
    ("nan", lambda: echo.enqueue(x=float("nan")), JobInputInvalid, "input.x"),
    ("infinity", lambda: echo.enqueue(x=[float("inf")]), JobInputInvalid, "input.x[0]"),
    ("nul", lambda: echo.enqueue(s="a\u0000b"), JobInputInvalid, "input.s"),
    ("lone surrogate", lambda: echo.enqueue(s="\ud800"), JobInputInvalid, "input.s"),
    ("over the size cap", lambda: echo.enqueue(s="x" * (300 * 1024)), JobInputInvalid, "input"),
    (
        "too deep",
        lambda: echo.enqueue(deep=_nested(10_000)),
        JobInputInvalid,
        "input.deep" + "[0]" * 31,
    ),
    ("huge integer", lambda: echo.enqueue(n=10**5000), JobInputInvalid, "input.n"),
    ("integer key", lambda: echo.enqueue(m={1: "a"}), JobInputInvalid, "input.m"),
    ("tuple", lambda: echo.enqueue(t=(1, 2)), JobInputInvalid, "input.t"),
    ("signature: unexpected", lambda: add.enqueue(a=1, b=2, c=3), JobInputInvalid, "input"),
    ("signature: missing", lambda: add.enqueue(a=1), JobInputInvalid, "input"),
    ("unknown job", lambda: ultimat3_jobs.enqueue("os.system", {}), JobUnknown, "name"),
    ("path-like name", lambda: ultimat3_jobs.enqueue("../x", {}), JobUnknown, "name"),
    ("name too long", lambda: ultimat3_jobs.enqueue("n" * 300, {}), JobUnknown, "name"),
    ("queue with a space", lambda: echo.using(queue="a b").enqueue(), JobQueueInvalid, "queue"),
    ("queue with a quote", lambda: echo.using(queue="a'b").enqueue(), JobQueueInvalid, "queue"),
    ("queue too long", lambda: echo.using(queue="q" * 64).enqueue(), JobQueueInvalid, "queue"),
    (
        "priority too high",
        lambda: echo.using(priority=101).enqueue(),
        JobPriorityInvalid,
        "priority",
    ),
    (
        "priority too low",
        lambda: echo.using(priority=-101).enqueue(),
        JobPriorityInvalid,
        "priority",
    ),
    (
        "priority not int",
        lambda: echo.using(priority="1").enqueue(),
        JobPriorityInvalid,
        "priority",
    ),
    (
        "naive run_at",
        lambda: echo.using(run_at=datetime(2030, 1, 1)).enqueue(),
        JobRunAtInvalid,
        "run_at",
    ),
    (
        "run_at as text",
        lambda: echo.using(run_at="2030-01-01").enqueue(),
        JobRunAtInvalid,
        "run_at",
    ),
    (
        "run_at and delay",
        lambda: echo.using(run_at=datetime.now(UTC), delay=5).enqueue(),
        JobRunAtInvalid,
        "run_at",
    ),
    ("negative delay", lambda: echo.using(delay=-1).enqueue(), JobRunAtInvalid, "delay"),
    ("infinite delay", lambda: echo.using(delay=float("inf")).enqueue(), JobRunAtInvalid, "delay"),
    (
        "key too long",
        lambda: echo.using(idempotency_key="k" * 256).enqueue(),
        JobOptionInvalid,
        "idempotency_key",
    ),
    (
        "key with a lone surrogate",
        lambda: echo.using(idempotency_key="k\ud800").enqueue(),
        JobOptionInvalid,
        "idempotency_key",
    ),
    ("tenant rule fails", lambda: tenant_strict.enqueue(other=1), JobInputInvalid, "tenant"),
    ("tenant too long", lambda: tenant_strict.enqueue(org="o" * 201), JobInputInvalid, "tenant"),
    (
        "empty key",
        lambda: echo.using(idempotency_key="").enqueue(),
        JobOptionInvalid,
        "idempotency_key",
    ),
    (
        "bad on_conflict",
        lambda: echo.using(on_conflict="ignore").enqueue(),
        JobOptionInvalid,
        "on_conflict",
    ),
    (
        "one bad input in a batch",
        lambda: echo.enqueue_many([{"ok": 1}, {"ok": 2}, {"bad": {1, 2}}]),
        JobInputInvalid,
        "inputs[2].bad",
    ),
    (
        "error mode in a batch",
        lambda: echo.using(on_conflict="error").enqueue_many([{}]),
        JobOptionInvalid,
        "on_conflict",
    ),
    (
        "one key for a batch",
        lambda: echo.using(idempotency_key="k").enqueue_many([{}, {}]),
        JobOptionInvalid,
        "idempotency_key",
    ),
    (
        "unknown option",
        lambda: ultimat3_jobs.enqueue("tests.echo", {}, colour="red"),
        JobOptionInvalid,
        "colour",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "field"),
    [pytest.param(call, error, field, id=case) for case, call, error, field in REFUSALS],
)
def test_refusal_names_the_field_and_writes_nothing(
    call: Enqueue, error: type[EnqueueRefused], field: str
) -> None:
    with pytest.raises(error) as caught:
        call()
    refusal = caught.value
    assert refusal.code.startswith("X_")
    assert refusal.field == field
    assert refusal.rule
    assert field.split(".")[0].split("[")[0] in refusal.message
    assert not Job.objects.exists()


def test_sensitive_fields_are_declared_on_the_definition() -> None:
    assert secret.definition.sensitive == frozenset({"api_token"})
