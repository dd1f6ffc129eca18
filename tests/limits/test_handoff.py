"""A settle that hands a finished run's slot to the next run of its key (``job_settle_handoff``)
and that the database refuses: the statement rolls back whole, nothing changes hands, the batch
is split as any refused settle is, the refused run alone fails with ``SettleRefused``, and the
runs offered the slot go back in line and take it the ordinary way: every other run of the key
completes, never two at once by the database's stamps, and no lease row is left."""

from __future__ import annotations

import time

import pytest

from tests.limits import jobs
from tests.limits.support import concurrency_rows, finished, intervals, most_at_once
from tests.worker import bodies
from tests.worker.conftest import wait_for
from tests.worker.test_settle_refused import refusing_results  # noqa: F401  (the fixture)
from ultimat3_jobs.models import Job

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.usefixtures("refusing_results")
def test_a_refused_settle_hands_nothing_off_and_the_waiting_runs_still_run(make_worker):
    refused = jobs.per_key_returns.enqueue(key="r", result={bodies.REFUSED_KEY: True}).id
    # A slow flush: the others are claimed and wait in the worker while the refused run's
    # ended body still holds the slot, so its settle offers them the slot.
    make_worker(concurrency=4, ack_flush=1.0)
    wait_for(
        lambda: Job.objects.filter(id=refused, state="running").exists(), timeout=10, what="run"
    )
    time.sleep(0.2)  # its body (0.02 s) has ended; its settle waits for the flush
    others = [jobs.per_key_returns.enqueue(key="r", result=n).id for n in range(4)]
    wait_for(lambda: finished([refused, *others]), timeout=30, what="every run settled")
    row = Job.objects.get(id=refused)
    assert row.state == "failed"
    assert [e["error_class"] for e in row.errors] == ["ultimat3_jobs.SettleRefused"]
    states = set(Job.objects.filter(id__in=others).values_list("state", flat=True))
    assert states == {"completed"}
    assert most_at_once(intervals([refused, *others])) == 1
    assert concurrency_rows() == 0
