"""The worker runs each body (sync, async, and the steps inside it) and each ``on_settled`` in
the run's tenant scope: ``current_tenant()`` and the ``TENANT_CONTEXT`` hook's scope. A job
declared ``tenant="none"`` runs with the scope cleared (the hook called with ``None``), whoever
enqueued it. On PostgreSQL and on the memory driver."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from tests.tenancy import jobs
from tests.tenancy.conftest import TENANCY
from tests.testapp import tenancy as policy
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.model.context import current_tenant
from ultimat3_jobs.model.tenancy import tenant_scope
from ultimat3_jobs.models import Job
from ultimat3_jobs.types import EnqueueRequest, JobRecord, JobState, new_job_id

ENDED = (JobState.COMPLETED, JobState.FAILED)


@pytest.fixture(params=["postgres", "memory"])
def store(request: pytest.FixtureRequest, transactional_db: None) -> Iterator[JobDriver]:
    with override_settings(ULTIMAT3_JOBS={**TENANCY, "DRIVER": request.param}):
        yield get_driver()


def run_all(make_worker: Any, driver: JobDriver, ids: list[uuid.UUID]) -> list[JobRecord]:
    """Run a worker on the tenancy queue until every job in ``ids`` has ended."""
    make_worker(driver=driver, queues=(jobs.QUEUE,))

    def records() -> list[JobRecord] | None:
        found = [driver.job_get(job_id=job_id) for job_id in ids]
        done = all(r is not None and r.state in ENDED for r in found)
        return found if done else None  # type: ignore[return-value]

    return wait_for(records, timeout=60, what="the jobs to end")  # type: ignore[no-any-return]


@pytest.mark.parametrize("handle", [jobs.read, jobs.read_async, jobs.stepped, jobs.stepped_async])
def test_the_body_runs_in_its_tenants_scope(
    store: JobDriver, make_worker: Any, handle: Any
) -> None:
    with tenant_scope("acme"):
        own = handle.enqueue(org="acme", document="acme-plan")
        other = handle.enqueue(org="acme", document="globex-plan")
    own_run, other_run = run_all(make_worker, store, [own.id, other.id])
    scope = {"tenant": "acme", "current_tenant": "acme", "ctx_tenant": "acme"}
    assert own_run.state == JobState.COMPLETED, own_run.errors
    assert own_run.result == {**scope, "may_read": True}
    assert other_run.result == {**scope, "may_read": False}
    assert current_tenant() is None and policy.current() is None  # nothing leaked here


def test_a_job_of_no_tenant_runs_with_the_scope_cleared(store: JobDriver, make_worker: Any) -> None:
    with tenant_scope("acme"):
        result = jobs.system.enqueue(document="acme-plan")
    (run,) = run_all(make_worker, store, [result.id])
    assert run.tenant_id == "acme"  # the row keeps who enqueued it
    nobody = {"tenant": None, "current_tenant": None, "ctx_tenant": None, "may_read": False}
    assert run.result == nobody
    assert None in policy.ENTERED  # the hook was called to clear the scope


def test_on_settled_runs_in_the_bodys_scope(store: JobDriver, make_worker: Any) -> None:
    with tenant_scope("acme"):
        owned = jobs.read.enqueue(org="acme", document="acme-plan")
        nobodys = jobs.system.enqueue(document="acme-plan")
    run_all(make_worker, store, [owned.id, nobodys.id])
    wait_for(lambda: len(jobs.SETTLED) == 2, timeout=60, what="both on_settled calls")
    assert sorted(jobs.SETTLED, key=str) == sorted(
        [
            ("tests.tenancy.read", "completed", "acme", "acme"),
            ("tests.tenancy.system", "completed", None, None),
        ],
        key=str,
    )


def test_a_tenant_context_hook_that_fails_fails_the_attempt(
    transactional_db: None, make_worker: Any
) -> None:
    broken = {**TENANCY, "TENANT_CONTEXT": "tests.testapp.tenancy.broken_scope"}
    with override_settings(ULTIMAT3_JOBS=broken):
        result = jobs.read.using(tenant="acme").enqueue(org="acme", document="acme-plan")
        driver = get_driver()
        make_worker(driver=driver, queues=(jobs.QUEUE,))
        record = wait_for(
            lambda: (r := driver.job_get(job_id=result.id)) and r.errors and r,
            timeout=60,
            what="a failed attempt",
        )
        assert "TypeError" in record.errors[0]["error_class"]


def test_on_settled_of_a_rescued_job_runs_in_its_tenants_scope(
    transactional_db: None, make_worker: Any
) -> None:
    """A worker lost the job's last attempt; the rescuer ends it and calls ``on_settled`` in the
    scope the body had."""
    with override_settings(ULTIMAT3_JOBS=TENANCY):
        driver = get_driver()
        job_id = new_job_id()
        request = EnqueueRequest(
            id=job_id,
            name=jobs.read.name,
            queue="elsewhere",
            input_json='{"org": "acme", "document": "acme-plan"}',
            max_attempts=1,
            tenant_id="acme",
        )
        driver.job_enqueue(request=request)
        [claimed] = driver.job_claim(
            queues=["elsewhere"], limit=1, worker_id="gone", lease_seconds=30
        )
        assert claimed.id == job_id
        Job.objects.filter(id=job_id).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
        make_worker(driver=driver, queues=(jobs.QUEUE,))
        wait_for(lambda: jobs.SETTLED, timeout=60, what="on_settled of the rescued job")
    assert jobs.SETTLED == [("tests.tenancy.read", "dead-lettered", "acme", "acme")]


def test_a_body_enqueues_for_its_own_tenant(store: JobDriver, make_worker: Any) -> None:
    """With ``TENANT_RESOLVER`` = ``current_tenant``, a body is the enqueuer of its follow-ups:
    its own tenant's job is written, another tenant's refused."""
    with tenant_scope("acme"):
        result = jobs.spawn.enqueue(org="acme", other="globex")
    (run,) = run_all(make_worker, store, [result.id])
    assert run.state == JobState.COMPLETED, run.errors
    assert run.result["other"] == "X_JOB_TENANT_MISMATCH"
    (child,) = run_all(make_worker, store, [uuid.UUID(run.result["child"])])
    assert child.tenant_id == "acme"
    assert child.result["may_read"] is True
