"""Progress never joins a body's transaction (design §3.2 R23).

A body that holds ``transaction.atomic()`` open on the job database and reports progress inside
it must not stall the worker's heartbeats: progress is stored by the worker's own connection
(with the heartbeat), never through the body's, so no other job of the worker is rescued or run
twice, and the progress is visible to other connections while the body still runs. The same
holds for ``async def`` bodies, whose progress used to wait for their settle.
"""

from __future__ import annotations

import time
import uuid

from django.db.models import Count

from tests.testapp import jobs
from tests.testapp.models import Effect
from tests.worker import bodies
from tests.worker.conftest import wait_for
from ultimat3_jobs.models import Job

LEASE = 3.0
HOLD = 2 * LEASE + 1.0
"""Past two lease periods."""

SHORT_LEASE = {
    "lease_seconds": LEASE,
    "heartbeat_interval": 0.5,
    "rescue_interval": 0.5,
    "concurrency": 4,
}


def _row(job_id: uuid.UUID) -> Job:
    return Job.objects.get(id=job_id)


def test_a_body_holding_a_transaction_stalls_no_lease_and_its_progress_shows(make_worker):
    holder = bodies.holds_transaction.enqueue(seconds=HOLD)
    sleepers = [jobs.record.enqueue(n=n, sleep=HOLD) for n in range(2)]
    ids = [holder.id, *(s.id for s in sleepers)]
    first = make_worker(worker_id="holder-worker", **SHORT_LEASE)
    wait_for(
        lambda: (
            Job.objects.filter(id__in=ids, state="running", worker_id="holder-worker").count() == 3
        ),
        what="the first worker runs all three",
    )
    started = time.monotonic()
    # A second worker on the same queues: its rescuer takes back any lease the first lets lapse,
    # and it would run those jobs a second time.
    second = make_worker(worker_id="rescuer-worker", **SHORT_LEASE)

    seen = wait_for(
        lambda: _row(holder.id).progress, timeout=HOLD - 1.0, what="the holder's progress"
    )
    assert seen == {"current": 1, "total": 2, "stage": "inside the transaction"}
    # Still inside its transaction: the holder has not settled and its effect is not committed.
    assert time.monotonic() - started < HOLD
    assert _row(holder.id).state == "running"
    assert not Effect.objects.filter(job_id=holder.id).exists()

    wait_for(
        lambda: not Job.objects.filter(id__in=ids, state__in=["queued", "running"]).exists(),
        timeout=HOLD + 4 * LEASE,
        what="all three settled",
    )
    rows = {row.id: row for row in Job.objects.filter(id__in=ids)}
    assert {(row.state, row.attempt) for row in rows.values()} == {("completed", 1)}
    assert all(not row.errors for row in rows.values()), [row.errors for row in rows.values()]
    runs = dict(
        Effect.objects.filter(job_id__in=ids)
        .values_list("job_id")
        .annotate(n=Count("id"))
        .values_list("job_id", "n")
    )
    assert runs == dict.fromkeys(ids, 1), "a job ran twice"
    assert first.worker._maintenance.rescued == 0
    assert second.worker._maintenance.rescued == 0
    assert _row(holder.id).progress == {"current": 1, "total": 2, "stage": "inside the transaction"}


def test_an_async_bodys_progress_shows_while_it_runs(make_worker):
    result = bodies.async_progress.enqueue(seconds=4.0)
    make_worker(**SHORT_LEASE)
    wait_for(lambda: _row(result.id).state == "running", what="the body started")
    seen = wait_for(lambda: _row(result.id).progress, timeout=5.0, what="the async progress")
    assert seen == {"current": 3, "total": 10, "stage": "async"}
    assert _row(result.id).state == "running", "progress must show before the settle"
    wait_for(lambda: _row(result.id).state == "completed", timeout=15)
