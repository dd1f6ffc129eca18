"""A staged job keeps the traceparent stamped when its caller staged it: x_outbox holds it, and
the relay publishes it as it is (it never stamps its own)."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import override_settings

from tests.outbox.conftest import OTHER_STORE
from tests.outbox.test_outbox import RunningRelay, jobs_in_store
from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.models import OutboxEntry

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "jobs"])

CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
RELAY = "00-11111111111111111111111111111111-2222222222222222-01"
ACTIVE = {"header": CALLER}


def test_a_staged_job_carries_the_caller_s_traceparent_through_the_relay() -> None:
    ACTIVE["header"] = CALLER
    with override_settings(ULTIMAT3_JOBS={**OTHER_STORE, "TRACEPARENT": lambda: ACTIVE["header"]}):
        with transaction.atomic():
            one = jobs.echo.enqueue(n=1)
            many = jobs.echo.enqueue_many([{"n": 2}, {"n": 3}])
        ids = [one.id, *(r.id for r in many)]
        assert {r.status for r in [one, *many]} == {"staged"}
        staged = OutboxEntry.objects.filter(id__in=ids).values_list("traceparent", flat=True)
        assert list(staged) == [CALLER] * 3
        ACTIVE["header"] = RELAY  # what the relay's own thread would stamp, if it stamped
        with RunningRelay():
            wait_for(lambda: len(jobs_in_store(id__in=ids)) == 3, what="the relay published")
    assert {job.traceparent for job in jobs_in_store(id__in=ids)} == {CALLER}
