"""A worker drains the Redis store end to end: enqueued through the public API, claimed, run,
acked; a failing body is retried and dead-lettered; a job whose worker was lost is rescued."""

from __future__ import annotations

from typing import Any

from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.types import JobState


def state(driver: RedisDriver, job_id: Any) -> JobState | None:
    record = driver.job_get(job_id=job_id)
    return None if record is None else record.state


def test_a_worker_runs_jobs_from_redis(redis_worker: tuple[RedisDriver, Any]) -> None:
    driver, make = redis_worker
    running = make(driver=driver, queues=("default", "math"))
    results = [jobs.echo.enqueue(n=n) for n in range(20)]
    added = jobs.add.enqueue(a=2, b=3)
    for result in [*results, added]:
        wait_for(lambda r=result: state(driver, r.id) is JobState.COMPLETED, what=str(result.id))
    assert driver.job_get(job_id=results[7].id).result == {"n": 7}  # type: ignore[union-attr]
    assert driver.job_get(job_id=added.id).result == 5  # type: ignore[union-attr]
    totals = {total.name: total.completed for total in driver.counter_total()}
    assert totals == {"tests.echo": 20, "tests.add": 1}
    running.stop()  # before the fixture deletes the store, so that no poll writes to it again
