"""A fired cron job carries the scheduler's own trace context when it has one (the TRACEPARENT
hook, or an OpenTelemetry span active in the scheduler's thread), else none: never a span of
some other thread."""

from __future__ import annotations

import threading

import pytest
from django.test import override_settings

from tests.scheduler.conftest import EVERY_SECOND
from tests.worker.conftest import wait_for
from ultimat3_jobs.models import Job

pytestmark = pytest.mark.django_db(transaction=True)

HEADER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
SCHEDULER_THREAD = "test-scheduler-traced"


def scheduler_span() -> str | None:
    """A hook that answers only on the scheduler's thread, as a span active there would."""
    return HEADER if threading.current_thread().name == SCHEDULER_THREAD else None


def fired_traceparents() -> list[str | None]:
    return list(Job.objects.filter(name=EVERY_SECOND).values_list("traceparent", flat=True))


def test_a_fired_job_carries_the_scheduler_s_trace_context(make_scheduler):
    settings = {"DEFAULT_TENANT": "none", "TRACEPARENT": scheduler_span}
    with override_settings(ULTIMAT3_JOBS=settings):
        running = make_scheduler("traced", thread_name=SCHEDULER_THREAD)
        wait_for(lambda: len(fired_traceparents()) >= 2, what="two fires")
        running.stop()
    assert set(fired_traceparents()) == {HEADER}


def test_without_a_span_in_the_scheduler_a_fired_job_carries_none(make_scheduler):
    trace = pytest.importorskip("opentelemetry.trace")
    context = trace.SpanContext(trace_id=1, span_id=2, is_remote=False)
    # A span active in this (the test's) thread is not the scheduler's.
    with trace.use_span(trace.NonRecordingSpan(context)):
        running = make_scheduler("untraced")
        wait_for(lambda: len(fired_traceparents()) >= 2, what="two fires")
        running.stop()
    assert set(fired_traceparents()) == {None}
