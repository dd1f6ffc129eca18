"""A backfill runs on the Redis driver end to end: a worker sweeps the rows of the project's
database batch by batch, the ledger in Redis records the run once and completed, and a second
run of the same name and scope is refused; in both ``rows=`` modes."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import F

from tests.testapp.models import SweepRow
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.factories import backfill
from ultimat3_jobs.types import JobState


def mark(rows: list[SweepRow]) -> None:
    SweepRow.objects.filter(pk__in=[row.pk for row in rows]).update(
        handled=F("handled") + 1, done=True
    )


def mark_range(rows: Any) -> None:
    rows.update(handled=F("handled") + 1, done=True)


sweep = backfill(
    "tests.redis.backfill",
    queryset=SweepRow.objects.all(),
    handle=mark,
    batch_size=3,
    count=SweepRow.objects.filter(done=False),
)
sweep_range = backfill(
    "tests.redis.backfill_range",
    queryset=SweepRow.objects.all(),
    handle=mark_range,
    batch_size=3,
    rows="queryset",
    count=SweepRow.objects.filter(done=False),
)


def ended(driver: RedisDriver, job_id: Any) -> Any:
    record = driver.job_get(job_id=job_id)
    return (
        record
        if record is not None
        and record.state is not JobState.RUNNING
        and (record.state is not JobState.QUEUED)
        else None
    )


@pytest.mark.parametrize("sweep", [sweep, sweep_range], ids=["instances", "queryset"])
def test_a_backfill_on_redis_sweeps_every_row_once_and_records_the_run(redis_worker, sweep) -> None:
    driver, make = redis_worker
    ids = [SweepRow.objects.create().pk for _ in range(7)]
    running = make(driver=driver, queues=("default",))
    result = sweep.enqueue()
    record = wait_for(lambda: ended(driver, result.id), timeout=60, what="the backfill")
    assert record.state is JobState.COMPLETED, record.errors
    assert record.result == {"rows": 7, "batches": 3, "cursor": ids[-1]}
    assert sorted(SweepRow.objects.values_list("handled", flat=True)) == [1] * 7
    (run,) = [r for r in driver.backfill_list() if r.name == sweep.name]
    assert (run.status, run.run_id, run.rows_done, run.batches_done, run.cursor) == (
        "completed",
        result.id,
        7,
        3,
        ids[-1],
    )

    again = sweep.enqueue()
    record = wait_for(lambda: ended(driver, again.id), timeout=60, what="the second run")
    assert record.state is JobState.FAILED
    assert "X_BACKFILL_COMPLETED" in record.errors[-1]["message"]
    assert [r.run_id for r in driver.backfill_list() if r.name == sweep.name] == [result.id]
    running.stop()
