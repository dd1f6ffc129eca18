"""The traceparent stamped at enqueue, on PostgreSQL: from the TRACEPARENT callable (no
OpenTelemetry needed), from the active OpenTelemetry span when ``opentelemetry-api`` is
installed, or from the caller; validated, and never allowed to fail an enqueue it did not come
from."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from django.core import checks
from django.test import override_settings

from tests.testapp.jobs import echo
from ultimat3_jobs.errors import JobOptionInvalid
from ultimat3_jobs.models import Job

pytestmark = pytest.mark.django_db

TRACE = "0af7651916cd43dd8448eb211c80319c"
HEADER = f"00-{TRACE}-b7ad6b7169203331-01"
OTHER = f"00-{TRACE}-00f067aa0ba902b7-00"

ANSWER: dict[str, object] = {"value": None, "calls": 0}


def header() -> object:
    """The TRACEPARENT hook the tests name by dotted path."""
    ANSWER["calls"] = int(ANSWER["calls"]) + 1  # type: ignore[call-overload]
    value = ANSWER["value"]
    if isinstance(value, Exception):
        raise value
    return value


@pytest.fixture
def hook() -> Iterator[dict[str, object]]:
    ANSWER.update(value=None, calls=0)
    with override_settings(
        ULTIMAT3_JOBS={"DEFAULT_TENANT": "none", "TRACEPARENT": "tests.test_traceparent.header"}
    ):
        yield ANSWER


def stored(job_id) -> str | None:
    return Job.objects.values_list("traceparent", flat=True).get(id=job_id)


def test_without_a_hook_or_a_span_a_job_carries_none() -> None:
    assert stored(echo.enqueue(n=1).id) is None


def test_the_hook_stamps_every_enqueue(hook) -> None:
    hook["value"] = HEADER
    assert stored(echo.enqueue(n=1).id) == HEADER
    results = echo.enqueue_many([{"n": n} for n in range(3)])
    assert [stored(r.id) for r in results] == [HEADER] * 3


def test_enqueue_many_asks_the_hook_once_per_call(hook) -> None:
    hook["value"] = HEADER
    echo.enqueue_many([{"n": n} for n in range(50)])
    assert hook["calls"] == 1


def test_a_callable_setting_works_without_a_dotted_path() -> None:
    with override_settings(ULTIMAT3_JOBS={"DEFAULT_TENANT": "none", "TRACEPARENT": lambda: OTHER}):
        assert stored(echo.enqueue(n=1).id) == OTHER


@pytest.mark.parametrize(
    "bad",
    [HEADER.upper(), f"00-{'0' * 32}-b7ad6b7169203331-01", "garbage", 7, RuntimeError("hook bug")],
    ids=["upper-case", "zero-trace", "garbage", "not-text", "raises"],
)
def test_a_bad_hook_value_is_dropped_with_a_warning_and_the_job_is_written(
    hook, bad, caplog
) -> None:
    hook["value"] = bad
    with caplog.at_level(logging.WARNING, logger="ultimat3_jobs.tracing"):
        result = echo.enqueue(n=1)
    assert result.created
    assert stored(result.id) is None
    assert "jobs.traceparent.invalid" in caplog.text


def test_an_all_zero_span_id_stores_none_without_a_warning(hook, caplog) -> None:
    hook["value"] = f"00-{TRACE}-{'0' * 16}-01"
    with caplog.at_level(logging.WARNING, logger="ultimat3_jobs.tracing"):
        assert stored(echo.enqueue(n=1).id) is None
    assert caplog.text == ""


def test_the_caller_s_traceparent_wins_over_the_hook(hook) -> None:
    hook["value"] = HEADER
    assert stored(echo.using(traceparent=OTHER).enqueue(n=1).id) == OTHER
    assert hook["calls"] == 0


def test_a_bad_traceparent_from_the_caller_is_refused_and_nothing_written(hook) -> None:
    hook["value"] = HEADER
    for call in (
        lambda: echo.using(traceparent="00-nope").enqueue(n=1),
        lambda: echo.using(traceparent=HEADER.upper()).enqueue_many([{"n": 1}]),
    ):
        with pytest.raises(JobOptionInvalid) as caught:
            call()
        assert (caught.value.code, caught.value.field) == ("X_JOB_OPTION_INVALID", "traceparent")
    assert not Job.objects.exists()


def test_a_traceparent_setting_that_does_not_import_is_a_system_check_error() -> None:
    with override_settings(
        ULTIMAT3_JOBS={"DEFAULT_TENANT": "none", "TRACEPARENT": "tests.nowhere.header"}
    ):
        errors = [e for e in checks.run_checks() if e.id == "ultimat3_jobs.E060"]
    assert len(errors) == 1
    assert "tests.nowhere.header" in errors[0].msg


def test_a_traceparent_setting_of_the_wrong_kind_is_refused_naming_it() -> None:
    with override_settings(ULTIMAT3_JOBS={"DEFAULT_TENANT": "none", "TRACEPARENT": 42}):
        errors = [e for e in checks.run_checks() if e.id == "ultimat3_jobs.E060"]
    assert len(errors) == 1
    assert "ULTIMAT3_JOBS['TRACEPARENT'] must be None, a callable" in errors[0].msg


# -- OpenTelemetry (the `otel` extra) ---------------------------------------------------------


def test_the_active_opentelemetry_span_is_stamped() -> None:
    trace = pytest.importorskip("opentelemetry.trace")
    context = trace.SpanContext(
        trace_id=int(TRACE, 16),
        span_id=0xB7AD6B7169203331,
        is_remote=False,
        trace_flags=trace.TraceFlags(0x01),
    )
    with trace.use_span(trace.NonRecordingSpan(context)):
        result = echo.enqueue(n=1)
        many = echo.enqueue_many([{"n": 2}])
    assert stored(result.id) == HEADER
    assert stored(many[0].id) == HEADER
    assert stored(echo.enqueue(n=3).id) is None  # no span active any more


def test_the_hook_takes_precedence_over_the_span(hook) -> None:
    trace = pytest.importorskip("opentelemetry.trace")
    hook["value"] = OTHER
    context = trace.SpanContext(trace_id=int(TRACE, 16), span_id=1, is_remote=False)
    with trace.use_span(trace.NonRecordingSpan(context)):
        assert stored(echo.enqueue(n=1).id) == OTHER
