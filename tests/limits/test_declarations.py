"""``@job(concurrency=..., rate=...)``: resolved once at declaration, a bad value refused with
the job and the field named; lease keys quoted so no key spells another name's lease."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ultimat3_jobs import Concurrency, Rate, cron, job
from ultimat3_jobs.errors import ConcurrencyKeyInvalid, JobDeclarationInvalid
from ultimat3_jobs.model.limits import concurrency_key, lease_requests, rate_key
from ultimat3_jobs.model.registry import registry


@pytest.fixture(autouse=True)
def _isolated_registry() -> Iterator[None]:
    saved = dict(registry._handles)
    yield
    registry._handles.clear()
    registry._handles.update(saved)


def declare(**options: Any) -> Any:
    options.setdefault("name", "tests.limits.declared")
    options.setdefault("tenant", "none")

    @job(**options)
    def body(ctx: Any, **input: Any) -> None: ...

    return body


def test_a_count_is_a_fleet_cap_on_the_job_name() -> None:
    definition = declare(concurrency=3).definition
    assert definition.concurrency == Concurrency(limit=3)
    assert definition.limited
    assert concurrency_key(definition.name, definition.concurrency, {}) == (
        "job:tests.limits.declared"
    )


def test_a_keyed_cap_and_a_rate_are_kept_as_declared() -> None:
    def per_customer(input: Any) -> str:
        return str(input["customer"])

    cap = Concurrency(key=per_customer, limit=2, when_busy="fail")
    definition = declare(concurrency=cap, rate=Rate(10, per="minute")).definition
    assert definition.concurrency is cap
    assert definition.rate == Rate(10, per="minute")
    requests = lease_requests(definition.name, cap, definition.rate, {"customer": 7})
    assert [(r.key, r.limit, r.kind, r.ttl_seconds) for r in requests] == [
        ("job-key:tests.limits.declared:7", 2, "concurrency", 0.0),
        ("rate:tests.limits.declared", 10, "rate", 60.0),
    ]


def test_no_limit_declared_means_none() -> None:
    definition = declare().definition
    assert definition.concurrency is None and definition.rate is None
    assert not definition.limited


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"concurrency": -1}, "concurrency"),
        ({"concurrency": True}, "concurrency"),
        ({"concurrency": 2.0}, "concurrency"),
        ({"concurrency": float("inf")}, "concurrency"),
        ({"concurrency": float("nan")}, "concurrency"),
        ({"concurrency": "3"}, "concurrency"),
        ({"concurrency": 10_001}, "concurrency"),
        ({"concurrency": Concurrency(limit=0)}, "concurrency.limit"),
        ({"concurrency": Concurrency(limit=-2)}, "concurrency.limit"),
        ({"concurrency": Concurrency(limit=False)}, "concurrency.limit"),
        ({"concurrency": Concurrency(limit=1.5)}, "concurrency.limit"),
        ({"concurrency": Concurrency(limit=float("inf"))}, "concurrency.limit"),
        ({"concurrency": Concurrency(limit=1, key="customer")}, "concurrency.key"),
        ({"concurrency": Concurrency(limit=1, when_busy="skip")}, "concurrency.when_busy"),
        ({"rate": 10}, "rate"),
        ({"rate": Rate(0)}, "rate.count"),
        ({"rate": Rate(-5)}, "rate.count"),
        ({"rate": Rate(True)}, "rate.count"),
        ({"rate": Rate(2.5)}, "rate.count"),
        ({"rate": Rate(float("nan"))}, "rate.count"),
        ({"rate": Rate(float("-inf"))}, "rate.count"),
        ({"rate": Rate(5, per="day")}, "rate.per"),
        ({"rate": Rate(5, key=3)}, "rate.key"),
    ],
)
def test_a_bad_limit_is_refused_naming_the_job_and_the_field(
    options: dict[str, Any], field: str
) -> None:
    with pytest.raises(JobDeclarationInvalid) as caught:
        declare(name="tests.limits.bad", **options)
    assert caught.value.code == "X_JOB_DECLARATION_INVALID"
    assert caught.value.message.startswith(f"job 'tests.limits.bad': {field} ")
    assert "tests.limits.bad" not in registry


def test_a_cron_job_takes_the_same_limits() -> None:
    @cron(cron="* * * * *", tz="UTC", tenant="none", name="tests.limits.cron", concurrency=1)
    def tick(ctx: Any) -> None: ...

    assert tick.definition.concurrency == Concurrency(limit=1)
    with pytest.raises(JobDeclarationInvalid, match=r"'tests\.limits\.cron2': concurrency "):

        @cron(cron="* * * * *", tz="UTC", tenant="none", name="tests.limits.cron2", concurrency=0)
        def tock(ctx: Any) -> None: ...


def test_a_key_cannot_spell_another_names_lease() -> None:
    by = Concurrency(limit=1, key=lambda input: input["k"])
    # Job "a" with key "b:c" and job "a:b" with key "c" must not share a lease.
    assert concurrency_key("a", by, {"k": "b:c"}) != concurrency_key("a:b", by, {"k": "c"})
    assert concurrency_key("a", by, {"k": "b%3Ac"}) != concurrency_key("a", by, {"k": "b:c"})
    assert concurrency_key("a", by, {"k": "x"}) == "job-key:a:x"
    assert rate_key("a", Rate(1, key=lambda i: i["k"]), {"k": "1:2"}) == "rate-key:a:1%3A2"


@pytest.mark.parametrize("answer", [None, 7, "", "x" * 201, b"bytes", ["a"]])
def test_a_key_function_must_answer_a_short_string(answer: Any) -> None:
    by = Concurrency(limit=1, key=lambda input: answer)
    with pytest.raises(ConcurrencyKeyInvalid) as caught:
        concurrency_key("tests.k", by, {})
    assert caught.value.code == "X_JOB_CONCURRENCY_KEY_INVALID"
    assert "concurrency.key" in caught.value.message


def test_a_key_function_that_raises_is_a_key_error() -> None:
    by = Rate(1, key=lambda input: input["missing"])
    with pytest.raises(ConcurrencyKeyInvalid, match=r"rate\.key raised KeyError"):
        rate_key("tests.k", by, {})
