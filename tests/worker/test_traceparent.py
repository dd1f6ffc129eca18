"""``ctx.traceparent``: the body sees the trace context stamped at enqueue."""

from __future__ import annotations

from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.models import Job

HEADER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_the_body_sees_the_traceparent_of_its_enqueue(make_worker) -> None:
    traced = jobs.traced.using(traceparent=HEADER).enqueue()
    untraced = jobs.traced.enqueue()
    make_worker()
    ids = [traced.id, untraced.id]
    wait_for(lambda: Job.objects.filter(id__in=ids, state="completed").count() == 2)
    assert Job.objects.get(id=traced.id).result == HEADER
    assert Job.objects.get(id=untraced.id).result is None
