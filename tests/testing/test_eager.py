"""eager_jobs / the jobs_eager fixture: an enqueue runs its job when its transaction commits."""

from __future__ import annotations

import pytest
from django.db import transaction

from tests.testing import jobs
from tests.testing.conftest import calls
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.testing import eager_jobs, enqueued_jobs
from ultimat3_jobs.types import JobState


def test_outside_a_transaction_the_job_runs_at_once(driver: JobDriver) -> None:
    with eager_jobs() as eager:
        queued = jobs.greet.enqueue(who="ada")
        assert calls("testing.greet") == [{"who": "ada", "tenant": None}]

    record = driver.job_get(job_id=queued.id)
    assert record is not None and record.state is JobState.COMPLETED
    assert [run.completed for run in eager.runs] == [(queued.id,)]


def test_enqueue_many_runs_every_job(driver: JobDriver) -> None:
    with eager_jobs():
        jobs.other.enqueue_many([{"n": 1}, {"n": 2}])
    assert calls("testing.other") == [1, 2]


def test_inside_atomic_the_job_runs_when_the_outermost_block_commits(
    driver: JobDriver, db: None
) -> None:
    with eager_jobs():
        with transaction.atomic():
            with transaction.atomic():
                jobs.greet.enqueue(who="ada")
            assert calls("testing.greet") == []
        assert calls("testing.greet") == [{"who": "ada", "tenant": None}]
    assert enqueued_jobs() == []


def test_a_rolled_back_enqueue_never_runs(driver: JobDriver, db: None) -> None:
    with eager_jobs():
        with pytest.raises(RuntimeError), transaction.atomic():
            jobs.greet.enqueue(who="ada")
            raise RuntimeError("roll back")
        with transaction.atomic():
            jobs.other.enqueue(n=1)
    assert calls("testing.greet") == []
    assert calls("testing.other") == [1]


def test_a_job_enqueued_by_an_eager_job_runs_too(driver: JobDriver) -> None:
    with eager_jobs() as eager:
        jobs.chain.enqueue(then=3)
    assert calls("testing.other") == [3]
    assert sum(run.attempts for run in eager.runs) == 2


def test_a_delayed_job_is_not_run(driver: JobDriver) -> None:
    with eager_jobs():
        queued = jobs.other.using(delay=60).enqueue(n=1)
    assert calls("testing.other") == []
    assert [job.id for job in enqueued_jobs()] == [queued.id]


def test_the_driver_is_restored_after_the_block(driver: JobDriver) -> None:
    with eager_jobs():
        pass
    assert "job_enqueue" not in vars(driver)
    jobs.other.enqueue(n=1)
    assert calls("testing.other") == []


def test_the_jobs_eager_fixture(driver: JobDriver, jobs_eager: object) -> None:
    jobs.other.enqueue(n=5)
    assert calls("testing.other") == [5]


@pytest.mark.django_db(transaction=True)
def test_with_real_commits_the_commit_runs_the_job() -> None:
    jobs.CALLS.clear()
    with eager_jobs():
        with transaction.atomic():
            queued = jobs.greet.enqueue(who="ada")
            assert calls("testing.greet") == []
        assert calls("testing.greet") == [{"who": "ada", "tenant": None}]
    record = get_driver().job_get(job_id=queued.id)
    assert record is not None and record.state is JobState.COMPLETED
