"""@job declarations: options validated at declaration, names unique, tenant required."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings

from ultimat3_jobs import Retry, cron, job
from ultimat3_jobs.errors import JobDeclarationInvalid, JobNameDuplicate, JobTenantRequired
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.registry import registry


@pytest.fixture(autouse=True)
def _isolated_registry() -> Iterator[None]:
    saved = dict(registry._handles)
    yield
    registry._handles.clear()
    registry._handles.update(saved)


def _module_level(ctx: Any) -> str:
    return "pong"


def test_declaration_registers_under_module_and_qualname() -> None:
    ping = job(tenant="none")(_module_level)
    assert ping.name == f"{__name__}._module_level"
    assert registry.get(ping.name) is ping
    assert ping(JobContext.for_direct_call(ping.name)) == "pong"


def test_bare_decorator_form_works() -> None:
    with override_settings(ULTIMAT3_JOBS={"DEFAULT_TENANT": "none"}):
        bare = job(_module_level)
        assert bare.definition.tenant == "none"


def test_a_job_inside_a_function_needs_an_explicit_name() -> None:
    with pytest.raises(JobDeclarationInvalid, match="declare jobs at module level"):

        @job(tenant="none")
        def local(ctx: Any) -> None: ...


def test_tenant_is_required_unless_the_project_says_none() -> None:
    with override_settings(ULTIMAT3_JOBS={}), pytest.raises(JobTenantRequired) as caught:

        @job(name="tests.unit.untenanted")
        def untenanted(ctx: Any) -> None: ...

    assert caught.value.code == "X_JOB_TENANT_REQUIRED"
    assert "tests.unit.untenanted" in caught.value.message
    assert "tests.unit.untenanted" not in registry


def test_tenant_callable_decides_from_input() -> None:
    @job(name="tests.unit.tenanted", tenant=lambda i: i["org"])
    def tenanted(ctx: Any, *, org: int) -> None: ...

    assert tenanted.tenant_for({"org": 7}) == "7"


def test_duplicate_name_is_refused_naming_both_places() -> None:
    @job(name="tests.unit.twice", tenant="none")
    def first(ctx: Any) -> None: ...

    with pytest.raises(JobNameDuplicate) as caught:

        @job(name="tests.unit.twice", tenant="none")
        def second(ctx: Any) -> None: ...

    assert caught.value.code == "X_JOB_NAME_DUPLICATE"
    assert ".first" in caught.value.message
    assert ".second" in caught.value.message
    assert registry.get("tests.unit.twice") is first


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"name": "bad name"}, "name must match"),
        ({"name": "../x"}, "name must match"),
        ({"name": "x" * 201}, "name must match"),
        ({"queue": "has space"}, "queue must match"),
        ({"queue": "q" * 64}, "queue must match"),
        ({"priority": 101}, "priority must be an integer from -100 to 100"),
        ({"priority": 1.5}, "priority must be an integer"),
        ({"retry": Retry(attempts=0)}, "retry.attempts must be an integer from 1 to 1000"),
        ({"retry": Retry(attempts=10**9)}, "retry.attempts"),
        ({"retry": Retry(backoff_base_seconds=float("nan"))}, "retry.backoff_base_seconds"),
        ({"retry": Retry(jitter=2)}, "retry.jitter"),
        (
            {"retry": Retry(backoff_base_seconds=10, backoff_cap_seconds=1)},
            "retry.backoff_cap_seconds must be at least",
        ),
        ({"retry": 3}, "retry must be a Retry"),
        ({"timeout": 0}, "timeout must be a finite number"),
        ({"timeout": float("inf")}, "timeout must be a finite number"),
        ({"lease_seconds": 0}, "lease_seconds must be an integer"),
        ({"tenant": "acme"}, 'tenant must be "none" or a callable'),
        ({"on_settled": "nope"}, "on_settled must be callable"),
        ({"sensitive": "api_token"}, "sensitive must be a list of input field names"),
        ({"sensitive": [1]}, "sensitive must be a list of input field names"),
    ],
)
def test_bad_options_are_refused_at_declaration(options: dict[str, Any], fragment: str) -> None:
    options.setdefault("name", "tests.unit.bad")
    options.setdefault("tenant", "none")
    with pytest.raises(JobDeclarationInvalid) as caught:

        @job(**options)
        def body(ctx: Any) -> None: ...

    assert caught.value.code == "X_JOB_DECLARATION_INVALID"
    assert fragment in caught.value.message
    assert options["name"] not in registry


def test_body_must_take_the_context() -> None:
    with pytest.raises(JobDeclarationInvalid, match="job context as its first parameter"):

        @job(name="tests.unit.noctx", tenant="none")
        def noctx() -> None: ...


def test_timeout_accepts_a_timedelta_and_async_bodies_are_marked() -> None:
    @job(name="tests.unit.slow", tenant="none", timeout=timedelta(minutes=2))
    async def slow(ctx: Any) -> None: ...

    assert slow.definition.timeout_seconds == 120.0
    assert slow.definition.is_async


def test_retry_delay_doubles_up_to_the_cap_with_bounded_jitter() -> None:
    retry = Retry(attempts=10, backoff_base_seconds=1, backoff_cap_seconds=30, jitter=0)
    assert [retry.delay_seconds(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    jittered = Retry(backoff_base_seconds=10, backoff_cap_seconds=10, jitter=0.2)
    rng = random.Random(7)
    delays = [jittered.delay_seconds(1, rng=rng) for _ in range(200)]
    assert all(8.0 <= d <= 12.0 for d in delays)
    assert len(set(delays)) > 100


def test_retry_defaults_come_from_settings() -> None:
    with override_settings(
        ULTIMAT3_JOBS={
            "DEFAULT_MAX_ATTEMPTS": 7,
            "RETRY_BACKOFF_BASE_SECONDS": 3,
            "RETRY_JITTER": 0,
        }
    ):
        assert Retry().max_attempts() == 7
        assert Retry().delay_seconds(2) == 6.0


def test_an_unknown_option_is_a_type_error_naming_it() -> None:
    """The options travel as one typed mapping; a keyword neither decorator takes is still
    refused when the decorator is called, before any body is declared, as Python would."""
    with pytest.raises(TypeError, match=r"^job\(\) got an unexpected keyword argument 'queues'"):
        job(tenant="none", queues="emails")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"^cron\(\) got an unexpected .* 'sensitive'"):
        cron(cron="0 3 * * *", tz="UTC", tenant="none", sensitive=["ssn"])  # type: ignore[call-arg]
