"""``ctx.step.run(..., atomic=True)``: the step function's writes on the job database and the
step's record commit together. A record the fence refuses, or a function that raises after
writing, leaves none of its writes behind; a plain step (beside each) keeps them, which is the
difference the option exists for."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest

from tests.drivers.support import enqueue
from tests.steps.test_step_api import attempt_ctx, retried
from tests.testapp.models import Effect
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.errors import JobLeaseLost, StepInvalid
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.models import Job, JobStep

pytestmark = pytest.mark.django_db


def _write(ctx, label):
    Effect.objects.create(
        job_id=ctx.job_id, attempt=ctx.attempt, worker_pid=os.getpid(), label=label
    )
    return label


def effects(job_id):
    return sorted(Effect.objects.filter(job_id=job_id).values_list("label", flat=True))


def _lose_the_job(job_id):
    """What a rescue does to a stalled attempt: the job's claim token is no longer this one's."""
    Job.objects.filter(id=job_id).update(claim_token=uuid.uuid4())


@pytest.mark.parametrize("atomic", [True, False])
def test_a_refused_record_takes_an_atomic_steps_writes_with_it(atomic):
    driver = PostgresDriver()
    ctx, job = attempt_ctx(driver)
    _lose_the_job(job.id)
    with pytest.raises(JobLeaseLost):
        ctx.step.run("charge", lambda: _write(ctx, "charged"), atomic=atomic)
    assert not JobStep.objects.filter(job_id=job.id).exists()
    assert effects(job.id) == ([] if atomic else ["charged"])


@pytest.mark.parametrize("atomic", [True, False])
def test_a_function_that_raises_after_writing_leaves_nothing_when_atomic(atomic):
    driver = PostgresDriver()
    ctx, job = attempt_ctx(driver)

    def half_done():
        _write(ctx, "half")
        raise ValueError("failed after its first write")

    with pytest.raises(ValueError, match="after its first write"):
        ctx.step.run("pay", half_done, atomic=atomic)
    ctx, job = retried(driver, job)
    assert ctx.step.run("pay", lambda: _write(ctx, "whole"), atomic=atomic) == "whole"
    assert effects(job.id) == (["whole"] if atomic else ["half", "whole"])
    assert JobStep.objects.get(job_id=job.id, name="pay").output == "whole"


def test_an_atomic_step_replays_its_record_without_running_again():
    driver = PostgresDriver()
    ctx, job = attempt_ctx(driver)
    assert ctx.step.run("once", lambda: _write(ctx, "first"), atomic=True) == "first"
    ctx, job = retried(driver, job)
    assert ctx.step.run("once", lambda: _write(ctx, "second"), atomic=True) == "first"
    assert effects(job.id) == ["first"]


@pytest.mark.parametrize("fn", [lambda: 1, None], ids=["plain", "async-def"])
def test_an_async_body_is_refused_an_atomic_step_and_writes_nothing(fn):
    driver = PostgresDriver()
    ctx, job = attempt_ctx(driver, is_async=True)

    async def coroutine_fn():
        return 1

    with pytest.raises(StepInvalid) as refused:
        asyncio.run(ctx.step.run("charge", fn or coroutine_fn, atomic=True))
    assert (refused.value.code, refused.value.context["rule"]) == (
        "X_STEP_INVALID",
        "atomic-sync-body",
    )
    assert "'charge'" in str(refused.value) and "sync body" in str(refused.value)
    assert not JobStep.objects.filter(job_id=job.id).exists()


@pytest.mark.parametrize("value", [1, "yes", None])
def test_atomic_must_be_a_bool(value):
    ctx, job = attempt_ctx(PostgresDriver())
    with pytest.raises(StepInvalid) as refused:
        ctx.step.run("charge", lambda: 1, atomic=value)
    assert refused.value.context["rule"] == "atomic-bool"
    assert not JobStep.objects.filter(job_id=job.id).exists()


def test_a_store_outside_the_django_database_stores_an_atomic_step_as_any_step():
    driver = MemoryDriver()
    ctx, job = attempt_ctx(driver, enqueue(driver))
    assert ctx.step.run("charge", lambda: "charged", atomic=True) == "charged"
    assert [s.name for s in driver.step_get_many(job_id=job.id)] == ["charge"]


def test_a_direct_call_runs_an_atomic_step_function():
    ctx = JobContext.for_direct_call("tests.direct")
    assert ctx.step.run("charge", lambda: {"ok": True}, atomic=True) == {"ok": True}
