"""The lease gate on the memory driver: a granted run that never started abandons its slots, a
started one leaves them to its settle; a busy key sheds the job back with its attempt given back
and a delay that grows with the crowd, unless only the worker's own ended runs hold it (the run
parks); a worker holds no more slots of a key than it has body slots."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.limits import jobs
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.runtime.common.pool import BodyPool
from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.runtime.worker.limits import SHED_CAP_SECONDS, LeaseGate, ShedPacer
from ultimat3_jobs.types import EnqueueRequest, JobState, SettleItem, new_job_id

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


def attempt_of(job, definition=jobs.one_at_a_time.definition) -> Attempt:
    ctx = JobContext(job_id=job.id, name=job.name, attempt=job.attempt)
    return Attempt(job=job, definition=definition, ctx=ctx)


def test_a_granted_run_that_never_started_abandons_its_slot(driver, gate) -> None:
    (job,) = claimed(driver)
    attempt = attempt_of(job)
    assert gate.start([attempt]) == ["run"]
    assert [h.job_id for h in driver.lease_holders(key=KEY)] == [job.id]
    assert gate.done(attempt)  # never began; its slot came free
    assert driver.lease_holders(key=KEY) == []


def test_a_started_run_leaves_its_slot_to_its_settle(driver, gate) -> None:
    (job,) = claimed(driver)
    attempt = attempt_of(job)
    assert gate.start([attempt]) == ["run"]
    assert attempt.begin()
    gate.done(attempt)
    assert len(driver.lease_holders(key=KEY)) == 1


def test_a_busy_key_sheds_the_job_back_with_its_attempt_given_back(driver, gate) -> None:
    first, second = claimed(driver, 2)
    assert gate.start([attempt_of(first)]) == ["run"]
    assert gate.start([attempt_of(second)]) == ["gone"]
    row = driver.job_get(job_id=second.id)
    assert row is not None
    assert (row.state, row.attempt, row.errors) == (JobState.QUEUED, 0, [])
    assert row.run_at > driver.now()
    assert (gate.shed, gate.gone) == (1, 1)
    assert sum(sum(c.values()) for c in driver.counter_snapshot().values()) == 0


def test_a_key_held_by_its_own_ended_runs_parks_the_run_instead_of_shedding_it(
    driver, gate
) -> None:
    first, second = claimed(driver, 2)
    ran = attempt_of(first)
    assert gate.start([ran]) == ["run"]
    assert ran.begin()
    gate.ended(ran)  # its body ended; its settle has not landed yet
    assert gate.start([attempt_of(second)]) == ["park"]
    row = driver.job_get(job_id=second.id)
    assert row is not None and row.state == JobState.RUNNING  # still this worker's
    assert gate.shed == 0
    item = SettleItem(job_id=first.id, claim_token=first.claim_token, action="complete")
    assert driver.job_settle_many(items=[item]) == {first.id}
    assert gate.done(ran)  # the settle landed: its slot came free, the parked run goes again
    assert gate.start([attempt_of(second)]) == ["run"]
    assert [h.job_id for h in driver.lease_holders(key=KEY)] == [second.id]


class Counting(MemoryDriver):
    acquires = 0

    def lease_acquire(self, **kwargs):
        self.acquires += 1
        return super().lease_acquire(**kwargs)


def test_a_worker_holds_no_more_slots_of_a_key_than_it_has_body_slots() -> None:
    driver = Counting()
    hooks = BodyPool(1, name="test-hooks")
    gate = LeaseGate(driver=driver, worker_id="w", hooks=hooks, slots=2)
    try:
        for _ in range(3):
            driver.job_enqueue(
                request=EnqueueRequest(
                    id=new_job_id(),
                    name=jobs.per_key_three.name,
                    queue="default",
                    input_json='{"key": "k"}',
                    max_attempts=3,
                )
            )
        runs = driver.job_claim(queues=["default"], limit=3, worker_id="w", lease_seconds=30)
        first, second, third = (attempt_of(job, jobs.per_key_three.definition) for job in runs)
        assert gate.start([first, second]) == ["run", "run"]
        assert first.begin()
        gate.ended(first)
        assert gate.start([third]) == ["park"]  # the key has a free slot, but not for this worker
        assert driver.acquires == 2  # parked without a statement
    finally:
        hooks.shutdown(timeout=1)
        driver.close()


def test_a_job_without_limits_passes_without_a_statement(driver, gate) -> None:
    (job,) = claimed(driver)
    assert gate.start([attempt_of(job, None)]) == ["run"]
    assert driver.lease_holders(key=KEY) == []


def test_the_shed_delay_grows_with_the_crowd_of_one_key() -> None:
    pacer = ShedPacer()
    delays = [pacer.delay("job:a") for _ in range(2000)]
    assert delays[0] < 0.1
    assert max(delays) <= SHED_CAP_SECONDS * 1.5
    assert sum(delays[-100:]) / 100 > 10  # a crowd of 2,000 spreads over tens of seconds
    assert pacer.delay("job:b") < 0.1  # another key starts afresh
