"""A purge pass runs on the Redis driver end to end: a worker runs the purge job, which reads
Redis's clock once and deletes finished jobs (their steps with them), expired events and old
counter rows in bounded batches, and touches no live job."""

from __future__ import annotations

from typing import Any

from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.factories import (
    expired_events,
    finished_jobs,
    old_counters,
    published_outbox,
    purge,
)
from ultimat3_jobs.types import JobState

sweep = purge(
    "tests.redis.sweep",
    [
        finished_jobs("completed", retention=0),
        finished_jobs("failed", retention=3600),
        published_outbox(retention=3600),
        expired_events(),
        old_counters(retention=0),
    ],
    batch_size=2,
)


def state(driver: RedisDriver, job_id: Any) -> JobState | None:
    record = driver.job_get(job_id=job_id)
    return None if record is None else record.state


def run_pass(driver: RedisDriver) -> tuple[Any, dict[str, int]]:
    result = sweep.enqueue()
    wait_for(lambda: state(driver, result.id) is JobState.COMPLETED, timeout=60, what="the pass")
    record = driver.job_get(job_id=result.id)
    assert record is not None
    return result.id, record.result  # type: ignore[return-value]


def test_a_purge_pass_on_redis(redis_worker: tuple[RedisDriver, Any]) -> None:
    driver, make = redis_worker
    running = make(driver=driver, queues=("default",))
    done = [jobs.echo.enqueue(n=n).id for n in range(5)]
    wait_for(lambda: all(state(driver, i) is JobState.COMPLETED for i in done), what="echoes")
    live = jobs.echo.using(queue="nobody-polls").enqueue(n=99).id
    driver.event_send(name="tests.redis.purged", ttl_seconds=0)

    first_job, first = run_pass(driver)
    assert first["jobs.completed"] == 5, first
    assert (first["jobs.failed"], first["outbox"], first["events"]) == (0, 0, 1)
    assert first["counters"] >= 1, "the echoes' minute row, older than the pass's clock"
    assert [state(driver, i) for i in done] == [None] * 5
    assert state(driver, live) is JobState.QUEUED
    assert [t.name for t in driver.counter_total()] == [sweep.name], "the first pass's own"

    # The first pass's job is finished now: the second pass deletes it and its steps.
    assert {step.name for step in driver.step_get_many(job_id=first_job)} >= {"clock"}
    _, second = run_pass(driver)
    assert second["jobs.completed"] == 1, second
    assert state(driver, first_job) is None
    assert driver.step_get_many(job_id=first_job) == []
    assert driver.redis().exists(f"{driver.prefix}:steps:{first_job}") == 0
    assert state(driver, live) is JobState.QUEUED
    running.stop()
