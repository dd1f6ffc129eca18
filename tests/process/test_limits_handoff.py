"""A run handed its concurrency slot by a settle (``job_settle_handoff``) whose worker is then
SIGKILLed, with a real ``jobs_worker`` process.

Eight runs of one key capped at 1 (``process.limited_one``, 0.3 s each) on one worker of three
slots: the runs after the first wait in the worker, and each settle hands the finished run's
slot to the next. Once two completed, the worker is killed while a run of it holds the slot.
From the rows: the dead run's slot is free again within lease + rescue interval of the kill; a
second worker completes every job; no two runs of the key overlap by the database's own stamps;
no lease row is left."""

from __future__ import annotations

import signal
import time
import uuid

import pytest
from django.db import connection, transaction

from tests.process.audit import db_now, enqueue, slot_freed_then_one_at_a_time
from tests.process.conftest import Workers
from ultimat3_jobs.models import Job, JobLease

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_a_handed_runs_worker_killed_frees_its_slot_and_every_job_completes(
    workers: Workers,
) -> None:
    ids = enqueue("process.limited_one", [{"key": "h", "sleep": 0.3} for _ in range(8)])
    first = workers.start("handoff-0", concurrency=3)
    workers.wait_registered(first, timeout=60)
    deadline = time.monotonic() + 60
    while Job.objects.filter(id__in=ids, state="completed").count() < 2:
        assert time.monotonic() < deadline, "two runs never completed"
        time.sleep(0.02)
    # The slot's holder and the running runs, read in one snapshot: read apart, a settle
    # handing the slot on between the two reads (a loaded machine) would make them disagree.
    while True:
        held, running = _holder_and_running(ids)
        if len(held) == 1 and held[0] in running:  # the handed run's slot
            break
        assert time.monotonic() < deadline, (held, running)
        time.sleep(0.02)
    first.signal(signal.SIGKILL)
    first.wait(30)
    killed_at = db_now()

    workers.start("handoff-1", concurrency=3)
    slot = JobLease.objects.filter(job_id=held[0][0], claim_token=held[0][1])
    slot_freed_then_one_at_a_time(workers, slot, ids, killed_at)


def _holder_and_running(
    ids: list[uuid.UUID],
) -> tuple[list[tuple[uuid.UUID, uuid.UUID]], set[tuple[uuid.UUID, uuid.UUID]]]:
    """The concurrency slot rows' runs, and the first worker's running runs, as of one
    snapshot."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("set transaction isolation level repeatable read")
        held = list(
            JobLease.objects.filter(kind="concurrency").values_list("job_id", "claim_token")
        )
        running = set(
            Job.objects.filter(id__in=ids, state="running", worker_id="handoff-0").values_list(
                "id", "claim_token"
            )
        )
    return held, running
