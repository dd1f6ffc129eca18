"""The worker enforces declared limits: a capped key never runs more than its limit at once
(intervals by the database's own clock), a busy run waits in the queue with its attempt given
back, ``when_busy="fail"`` refuses only on evidence, a bad key fails its attempt and nothing
more, and a driver without a lease store is refused at start-up and by the system check."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

import pytest
from django.test import override_settings
from django.utils import timezone

from tests.limits import jobs
from tests.limits.support import concurrency_rows, counter, finished, intervals, most_at_once
from tests.worker.conftest import wait_for
from ultimat3_jobs.checks import LIMITS_CHECK_ID, check_limits_enforceable
from ultimat3_jobs.drivers.base import LeaseRequest
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.errors import ConcurrencyUnenforceable
from ultimat3_jobs.models import Job, JobLease
from ultimat3_jobs.runtime.worker import Worker, WorkerConfig

QUEUES = {"queues": ("default",)}


def test_a_fleet_cap_of_one_never_overlaps_across_two_workers(make_worker) -> None:
    ids = [r.id for r in jobs.one_at_a_time.enqueue_many([{"sleep": 0.03}] * 12)]
    make_worker(**QUEUES)
    make_worker(**QUEUES)
    wait_for(lambda: finished(ids), timeout=60, what="every capped job settled")
    rows = Job.objects.filter(id__in=ids)
    assert {(row.state, row.attempt) for row in rows} == {("completed", 1)}
    assert most_at_once(intervals(ids)) == 1
    assert concurrency_rows() == 0
    assert counter("tests.limits.one_at_a_time", "retried") == 0  # a shed is no retry
    assert counter("tests.limits.one_at_a_time", "completed") == 12


def test_runs_of_a_key_its_own_finished_runs_hold_wait_in_the_worker_unshed(make_worker) -> None:
    # One slot: once bodies proved short the worker claims a batch ahead, and each next run of
    # the key finds the slot held by the run that just ended, whose settle is on its way.
    ids = [r.id for r in jobs.one_at_a_time.enqueue_many([{"sleep": 0.0}] * 40)]
    running = make_worker(**QUEUES, concurrency=1)
    wait_for(lambda: finished(ids), timeout=60, what="every capped job settled")
    assert {row.state for row in Job.objects.filter(id__in=ids)} == {"completed"}
    assert most_at_once(intervals(ids)) == 1
    assert running.worker._limits.gate.shed == 0  # none went back to the queue
    assert concurrency_rows() == 0


def test_each_key_is_capped_on_its_own(make_worker) -> None:
    inputs = [{"key": key, "sleep": 0.03} for key in ("a", "b") for _ in range(6)]
    results = jobs.per_key.enqueue_many(inputs)
    make_worker(**QUEUES, concurrency=6)
    ids = [r.id for r in results]
    wait_for(lambda: finished(ids), timeout=60, what="every keyed job settled")
    by_key: dict[str, list[Any]] = {"a": [], "b": []}
    for result, given in zip(results, inputs, strict=True):
        by_key[given["key"]].append(result.id)
    assert [most_at_once(intervals(by_key[k])) for k in ("a", "b")] == [1, 1]
    assert most_at_once(intervals(ids)) == 2  # the two keys did run side by side
    assert concurrency_rows() == 0


def hold(key: str, *, expired: bool = False) -> Any:
    """A live holder of ``key``: another job claimed and holding the slot, as a worker would."""
    driver = PostgresDriver()
    held = jobs.exclusive.using(queue="elsewhere").enqueue(key=key)
    (claimed,) = driver.job_claim(queues=["elsewhere"], limit=1, worker_id="w", lease_seconds=60)
    assert claimed.id == held.id
    grant = driver.lease_acquire(
        job_id=claimed.id,
        claim_token=claimed.claim_token,
        requests=[LeaseRequest(key=f"job-key:tests.limits.exclusive:{key}", limit=1)],
    )
    assert grant.granted
    if expired:
        JobLease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    return claimed


def test_when_busy_fail_refuses_a_run_while_another_live_run_holds_the_key(make_worker) -> None:
    holder = hold("k1")
    refused = jobs.exclusive.enqueue(key="k1")
    running = make_worker(**QUEUES)
    wait_for(lambda: finished([refused.id]), what="the refusal")
    row = Job.objects.get(id=refused.id)
    assert (row.state, row.attempt, row.result) == ("failed", 0, None)
    (entry,) = row.errors
    assert entry["error_class"] == "ultimat3_jobs.KeyBusy"
    assert str(holder.id) in entry["message"]
    assert counter("tests.limits.exclusive", "refused") == 1
    assert counter("tests.limits.exclusive", "dead") == 0
    wait_for(lambda: (str(refused.id), "refused") in jobs.SETTLED, what="on_settled refused")
    assert running.worker._limits.gate.refused == 1


def test_when_busy_fail_runs_once_the_holders_lease_expired(make_worker) -> None:
    hold("k2", expired=True)
    runs = jobs.exclusive.enqueue(key="k2")
    make_worker(**QUEUES)
    wait_for(lambda: finished([runs.id]), what="the run")
    row = Job.objects.get(id=runs.id)
    assert (row.state, row.result) == ("completed", "k2")
    # on_settled runs after the settle landed, so a moment after the row reads completed.
    wait_for(lambda: (str(runs.id), "completed") in jobs.SETTLED, what="on_settled completed")


@pytest.mark.parametrize("key", [None, "", 7, "x" * 201])
def test_a_bad_key_fails_the_attempt_and_the_worker_goes_on(make_worker, key: Any) -> None:
    bad = jobs.bad_key.enqueue(key=key)
    good = jobs.one_at_a_time.enqueue(sleep=0.0)
    make_worker(**QUEUES)
    wait_for(lambda: finished([bad.id, good.id]), what="both jobs settled")
    row = Job.objects.get(id=bad.id)
    assert row.state == "failed"
    assert row.errors[-1]["error_class"] == "ultimat3_jobs.errors.ConcurrencyKeyInvalid"
    assert "concurrency.key" in row.errors[-1]["message"]
    assert Job.objects.get(id=good.id).state == "completed"
    wait_for(lambda: (str(bad.id), "dead-lettered") in jobs.SETTLED, what="on_settled")


class NoLeaseStore(MemoryDriver):
    has_lease_store: ClassVar[bool] = False


def test_a_worker_refuses_to_start_without_a_lease_store() -> None:
    with pytest.raises(ConcurrencyUnenforceable) as caught:
        Worker(NoLeaseStore(), WorkerConfig(queues=("default",), concurrency=1))
    assert caught.value.code == "X_JOB_CONCURRENCY_UNENFORCEABLE"
    assert "tests.limits.one_at_a_time" in caught.value.message
    assert "'memory'" in caught.value.message


def test_the_system_check_reports_limits_it_cannot_enforce() -> None:
    driver_path = f"{__name__}.NoLeaseStore"
    with override_settings(ULTIMAT3_JOBS={"DEFAULT_TENANT": "none", "DRIVER": driver_path}):
        (error,) = check_limits_enforceable()
    assert error.id == LIMITS_CHECK_ID
    assert "X_JOB_CONCURRENCY_UNENFORCEABLE" in error.msg
    assert check_limits_enforceable() == []
