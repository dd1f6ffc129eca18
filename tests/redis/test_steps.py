"""Durable steps on the Redis driver in a real worker: a sleep that gives its attempt back, a
wait ended by ``send_event`` (and woken over pub/sub), a saga unwound, and a removed job's steps
gone from Redis."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.steps import bodies
from tests.worker.conftest import wait_for
from ultimat3_jobs import send_event
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.types import JobState


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    bodies.CALLS.clear()
    bodies.SETTLED.clear()


def state(driver: RedisDriver, job_id: Any) -> JobState | None:
    record = driver.job_get(job_id=job_id)
    return None if record is None else record.state


def steps(driver: RedisDriver, job_id: Any) -> dict[str, Any]:
    return {step.name: step for step in driver.step_get_many(job_id=job_id)}


def suspended(driver: RedisDriver, job_id: Any) -> bool:
    """The job gave its attempt back while its step "wait" waits."""
    return state(driver, job_id) is JobState.QUEUED and "wait" in steps(driver, job_id)


def test_a_sleep_resumes_without_spending_an_attempt(
    redis_worker: tuple[RedisDriver, Any],
) -> None:
    driver, make = redis_worker
    running = make(driver=driver, concurrency=1)
    sleeping = bodies.sleeper.enqueue(seconds=1.0)
    wait_for(lambda: "nap" in steps(driver, sleeping.id), what="the sleep stored")
    wait_for(lambda: state(driver, sleeping.id) is JobState.COMPLETED, what="the sleeper done")
    done = driver.job_get(job_id=sleeping.id)
    assert done is not None and (done.attempt, done.errors) == (1, [])
    assert done.result == {"first": [1, 2], "second": {"attempt": 1}}
    assert bodies.calls_of(sleeping.id) == ["before", "after"]
    nap = steps(driver, sleeping.id)["nap"]
    assert nap.status == "done"
    assert (nap.wait_until - nap.wait_since).total_seconds() == pytest.approx(1.0, abs=0.01)
    running.stop()


def test_send_event_resumes_the_waiting_job_at_once(
    redis_worker: tuple[RedisDriver, Any],
) -> None:
    driver, make = redis_worker
    running = make(driver=driver)
    waiting = bodies.waiter.enqueue(event="order.paid", key="o-1")
    wait_for(lambda: suspended(driver, waiting.id), what="waiting")
    assert send_event("order.paid", key="o-2", payload={"no": 1}) == 0
    sent = time.monotonic()
    assert send_event("order.paid", key="o-1", payload={"amount": 12}) == 1
    wait_for(lambda: state(driver, waiting.id) is JobState.COMPLETED, timeout=5, what="resumed")
    assert time.monotonic() - sent < 2.0, "woken over pub/sub, not at the next idle poll"
    done = driver.job_get(job_id=waiting.id)
    assert done is not None and (done.attempt, done.result) == (1, {"amount": 12})
    running.stop()


def test_a_saga_failing_for_good_is_compensated_in_redis(
    redis_worker: tuple[RedisDriver, Any],
) -> None:
    driver, make = redis_worker
    running = make(driver=driver)
    saga = bodies.saga.enqueue(fail_at=3)
    wait_for(lambda: state(driver, saga.id) is JobState.FAILED, what="failed for good")
    running.stop()
    stored = steps(driver, saga.id)
    assert {name: s.status for name, s in stored.items()} == {
        "step1": "compensated",
        "step2": "compensated",
    }
    assert [what for what in bodies.calls_of(saga.id) if what.startswith("undo")] == [
        "undo2:20",
        "undo1:10",
    ]


def test_removing_a_job_deletes_its_steps_and_waits(redis_worker: tuple[RedisDriver, Any]) -> None:
    driver, make = redis_worker
    running = make(driver=driver)
    waiting = bodies.waiter.enqueue(event="never.sent")
    wait_for(lambda: suspended(driver, waiting.id), what="waiting")
    running.stop()
    client = driver.redis()
    assert client.exists(f"{driver.prefix}:steps:{waiting.id}")
    assert driver.job_remove(job_id=waiting.id)
    left = [key.decode() for key in client.scan_iter(match=f"{driver.prefix}:*")]
    assert [key for key in left if ":steps:" in key or ":waits:" in key] == []
    assert send_event("never.sent") == 0
