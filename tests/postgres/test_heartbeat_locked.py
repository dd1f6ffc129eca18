"""job_heartbeat_many never waits on a row lock: a job row that another transaction holds (a
body's own transaction on the job database) is skipped for one beat and answered busy, which is
not a lost lease. One waiting heartbeat would stall the maintenance thread, and with it every
lease of the worker."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import connection, transaction

from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.models import Job
from ultimat3_jobs.types import EnqueueRequest, Heartbeat, new_job_id

HOLD_SECONDS = 10.0


def _running(driver: PostgresDriver, count: int) -> list:
    for _ in range(count):
        driver.job_enqueue(
            request=EnqueueRequest(
                id=new_job_id(), name="tests.echo", queue="default", input_json="{}"
            )
        )
    jobs = driver.job_claim(queues=["default"], limit=count, worker_id="w", lease_seconds=30)
    assert len(jobs) == count
    return jobs


class RowHolder:
    """Another connection (its own thread) that locks a job row in an open transaction, as a
    body's ``transaction.atomic()`` would, until released."""

    def __init__(self, job_id: uuid.UUID) -> None:
        self.job_id = job_id
        self.locked = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        try:
            with transaction.atomic():
                Job.objects.select_for_update().filter(id=self.job_id).update(progress={"body": 1})
                self.locked.set()
                self.release.wait(HOLD_SECONDS)
        finally:
            connection.close()

    def __enter__(self) -> RowHolder:
        self.thread.start()
        assert self.locked.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(10)


@pytest.mark.django_db(transaction=True)
def test_a_locked_row_is_skipped_as_busy_never_waited_for_nor_lost() -> None:
    driver = PostgresDriver()
    locked, free, cancelled = _running(driver, 3)
    assert driver.job_cancel(job_id=cancelled.id)
    attempts = [(job.id, job.claim_token) for job in (locked, free, cancelled)]
    progress = {locked.id: '{"current":1}', free.id: '{"current":2}'}
    with RowHolder(locked.id), RowHolder(cancelled.id):
        started = time.monotonic()
        beat = driver.job_heartbeat_many(attempts=attempts, lease_seconds=60, progress=progress)
        elapsed = time.monotonic() - started
        assert elapsed < 2.0, f"the heartbeat waited {elapsed:.1f} s on a row lock"
        # Locked and still ours: busy. Locked but cancelled: lost, not busy. Free: renewed.
        assert beat == Heartbeat(renewed={free.id}, busy={locked.id})
        assert beat.held == {locked.id, free.id}
        assert Job.objects.get(id=free.id).progress == {"current": 2}
    # Released (the holder committed its own write): the next beat renews and stores.
    beat = driver.job_heartbeat_many(attempts=attempts, lease_seconds=60, progress=progress)
    assert beat == Heartbeat(renewed={locked.id, free.id})
    assert Job.objects.get(id=locked.id).progress == {"current": 1}
