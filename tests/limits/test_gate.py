"""The lease gate on the memory driver: a granted run that never started abandons its slots, a
started one leaves them to its settle; a busy key sheds the job back with its attempt given back
and a delay that grows with the crowd."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.limits import jobs
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.runtime.common.pool import BodyPool
from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.runtime.worker.limits import SHED_CAP_SECONDS, LeaseGate, ShedPacer
from ultimat3_jobs.types import EnqueueRequest, JobState, new_job_id

KEY = "job:tests.limits.one_at_a_time"


@pytest.fixture
def driver() -> Iterator[MemoryDriver]:
    built = MemoryDriver()
    yield built
    built.close()


@pytest.fixture
def gate(driver: MemoryDriver) -> Iterator[LeaseGate]:
    hooks = BodyPool(1, name="test-hooks")
    yield LeaseGate(driver=driver, worker_id="w", hooks=hooks)
    hooks.shutdown(timeout=1)


def claimed(driver: MemoryDriver, n: int = 1) -> list:
    for _ in range(n):
        driver.job_enqueue(
            request=EnqueueRequest(
                id=new_job_id(),
                name=jobs.one_at_a_time.name,
                queue="default",
                input_json="{}",
                max_attempts=3,
            )
        )
    return driver.job_claim(queues=["default"], limit=n, worker_id="w", lease_seconds=30)


def attempt_of(job) -> Attempt:
    ctx = JobContext(job_id=job.id, name=job.name, attempt=job.attempt)
    return Attempt(job=job, definition=jobs.one_at_a_time.definition, ctx=ctx)


def test_a_granted_run_that_never_started_abandons_its_slot(driver, gate) -> None:
    (job,) = claimed(driver)
    assert gate.admit(job, jobs.one_at_a_time.definition)
    assert [h.job_id for h in driver.lease_holders(key=KEY)] == [job.id]
    gate.done(attempt_of(job))  # never began
    assert driver.lease_holders(key=KEY) == []


def test_a_started_run_leaves_its_slot_to_its_settle(driver, gate) -> None:
    (job,) = claimed(driver)
    assert gate.admit(job, jobs.one_at_a_time.definition)
    attempt = attempt_of(job)
    assert attempt.begin()
    gate.done(attempt)
    assert len(driver.lease_holders(key=KEY)) == 1


def test_a_busy_key_sheds_the_job_back_with_its_attempt_given_back(driver, gate) -> None:
    first, second = claimed(driver, 2)
    assert gate.admit(first, jobs.one_at_a_time.definition)
    assert not gate.admit(second, jobs.one_at_a_time.definition)
    row = driver.job_get(job_id=second.id)
    assert row is not None
    assert (row.state, row.attempt, row.errors) == (JobState.QUEUED, 0, [])
    assert row.run_at > driver.now()
    assert gate.shed == 1
    assert sum(sum(c.values()) for c in driver.counter_snapshot().values()) == 0


def test_a_job_without_limits_passes_without_a_statement(driver, gate) -> None:
    (job,) = claimed(driver)
    assert gate.admit(job, None)
    assert driver.lease_holders(key=KEY) == []


def test_the_shed_delay_grows_with_the_crowd_of_one_key() -> None:
    pacer = ShedPacer()
    delays = [pacer.delay("job:a") for _ in range(2000)]
    assert delays[0] < 0.1
    assert max(delays) <= SHED_CAP_SECONDS * 1.5
    assert sum(delays[-100:]) / 100 > 10  # a crowd of 2,000 spreads over tens of seconds
    assert pacer.delay("job:b") < 0.1  # another key starts afresh
