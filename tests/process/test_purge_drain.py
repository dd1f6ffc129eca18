"""A purge of finished jobs past their retention, in bounded batches, while a worker drains a
queue beside it (real ``jobs_worker`` processes, one per queue). Every old finished job is
deleted; no live job is touched: the drain's jobs all run and complete, jobs queued for later
keep their rows as they were, and jobs finished inside the retention stay. The default run
holds 20,000 old finished jobs (``ULTIMAT3_PURGE_DRAIN_ROWS``); ``-m slow`` holds 1,000,000
beside a drain of 20,000 (``ULTIMAT3_PURGE_DRAIN_ROWS_SLOW`` and
``ULTIMAT3_PURGE_DRAIN_JOBS_SLOW`` override them)."""

from __future__ import annotations

import json
import os
import signal

import pytest
from django.db import connection

from tests.process.audit import enqueue, settled
from tests.process.conftest import Workers
from tests.processapp.jobs import DRAIN, PURGE, PURGE_QUEUE
from tests.testapp.models import Effect
from ultimat3_jobs.models import Job, JobStep

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

OLD = "process.old"
LATER = "process.later"


def _insert_finished(rows: int, *, age: str, name: str = OLD) -> None:
    """``rows`` finished jobs (completed, failed, cancelled in turn, numbered across the
    statements) that finished ``age`` ago, written by one statement per 100,000."""
    with connection.cursor() as cursor:
        for start in range(0, rows, 100_000):
            cursor.execute(
                """
                insert into x_jobs (id, name, queue, state, input, attempt, max_attempts,
                                    run_at, created_at, started_at, finished_at)
                select gen_random_uuid(), %s, 'default',
                       (array['completed', 'failed', 'cancelled'])[1 + n %% 3], '{}'::jsonb,
                       1, 3, now() - %s::interval, now() - %s::interval,
                       now() - %s::interval, now() - %s::interval
                  from generate_series(%s, %s) as n
                """,
                [name, age, age, age, age, start + 1, min(start + 100_000, rows)],
            )


def _purge_beside_a_drain(workers: Workers, monkeypatch, *, rows: int, drained: int) -> None:
    _insert_finished(rows, age="2 hours")
    _insert_finished(30, age="10 minutes", name="process.recent")  # inside the retention
    later = enqueue(LATER, [{"n": n} for n in range(50)])
    with connection.cursor() as cursor:
        # Queued for tomorrow and created long ago: live, so never the purge's, however old.
        cursor.execute(
            "update x_jobs set run_at = now() + interval '1 day', "
            "created_at = now() - interval '30 days' where id = any(%s)",
            [later],
        )
    before_later = {
        str(job["id"]): json.dumps(job, default=str)
        for job in Job.objects.filter(id__in=later).values()
    }
    monkeypatch.setenv("ULTIMAT3_PURGE_RETENTION", "3600")
    monkeypatch.setenv("ULTIMAT3_PURGE_BATCH", "1000")
    drain_ids = enqueue(DRAIN, [{"n": n, "pause": 0.01} for n in range(drained)], queue="drain")
    # The purge's worker is up and claiming before the drain starts, so the pass begins as soon
    # as it is enqueued, while the drain (each job pausing a little) is under way.
    purger = workers.start("purger", queues=PURGE_QUEUE, concurrency=1)
    workers.wait_registered(purger, timeout=120)
    drainer = workers.start("drainer", queues="drain", concurrency=4)
    workers.wait(
        lambda: Job.objects.filter(id__in=drain_ids, state="completed").exists(),
        timeout=120,
        what="the drain under way",
    )
    [purge_id] = enqueue(PURGE, [{}], queue=PURGE_QUEUE)
    workers.wait(lambda: settled([purge_id]), timeout=900, what="the purge pass settled")
    # The drain was still running beside the purge when the purge ended.
    left_to_drain = Job.objects.filter(id__in=drain_ids, state__in=("queued", "running")).count()
    workers.wait(lambda: settled(drain_ids), timeout=600, what="the drain finished")
    for process in (drainer, purger):
        process.signal(signal.SIGTERM)
        assert process.wait(30) == 0, workers.report()

    purge_job = Job.objects.get(id=purge_id)
    assert purge_job.state == "completed", (purge_job.errors, workers.report())
    deleted = purge_job.result
    assert sum(deleted.values()) == rows, deleted
    assert deleted == {
        "jobs.completed": len(range(3, rows + 1, 3)),
        "jobs.failed": len(range(1, rows + 1, 3)),
        "jobs.cancelled": len(range(2, rows + 1, 3)),
    }
    # The drain ran beside the purge: some of its jobs finished after the pass began.
    assert Job.objects.filter(id__in=drain_ids, finished_at__gt=purge_job.started_at).exists()
    steps = dict(JobStep.objects.filter(job_id=purge_id).values_list("name", "output"))
    assert set(steps) == {
        "clock",
        "target:jobs.completed",
        "target:jobs.failed",
        "target:jobs.cancelled",
    }
    assert not Job.objects.filter(name=OLD).exists(), "an old finished job was left"
    # No live job touched.
    assert Job.objects.filter(name="process.recent").count() == 30
    after_later = {
        str(job["id"]): json.dumps(job, default=str)
        for job in Job.objects.filter(id__in=later).values()
    }
    assert after_later == before_later, "a job queued for later was changed"
    assert Job.objects.filter(id__in=drain_ids, state="completed").count() == drained
    ran = set(Effect.objects.filter(label="drain").values_list("job_id", flat=True))
    assert ran == set(drain_ids), "a drained job never ran"
    print(
        f"\n[purge/drain] {rows} old finished jobs deleted, {drained} drained, "
        f"{left_to_drain} still draining when the purge ended"
    )


def test_a_purge_beside_a_drain_touches_no_live_job(workers: Workers, monkeypatch) -> None:
    rows = int(os.environ.get("ULTIMAT3_PURGE_DRAIN_ROWS", "20000"))
    _purge_beside_a_drain(workers, monkeypatch, rows=rows, drained=3000)


@pytest.mark.slow
def test_a_purge_of_1_000_000_finished_jobs_beside_a_drain(workers: Workers, monkeypatch) -> None:
    rows = int(os.environ.get("ULTIMAT3_PURGE_DRAIN_ROWS_SLOW", "1000000"))
    drained = int(os.environ.get("ULTIMAT3_PURGE_DRAIN_JOBS_SLOW", "20000"))
    _purge_beside_a_drain(workers, monkeypatch, rows=rows, drained=drained)
