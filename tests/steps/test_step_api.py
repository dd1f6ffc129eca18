"""``ctx.step`` on a claimed attempt, against the real database: stored before it returns, the
JSON form answered, replayed by name with no statement, fenced, refused with a clear code."""

from __future__ import annotations

import asyncio
import math
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tests.drivers.support import claim_one, enqueue, get, nack
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.errors import (
    EventInvalid,
    JobAborted,
    JobLeaseLost,
    StepInvalid,
    StepMismatch,
    StepOnceInterrupted,
)
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.steps import InlineWriter, StepSuspended
from ultimat3_jobs.models import Job, JobStep
from ultimat3_jobs.runtime.steps.attempt import bind_steps
from ultimat3_jobs.types import JobState

pytestmark = pytest.mark.django_db


@pytest.fixture
def driver():
    return PostgresDriver()


def attempt_ctx(driver, job_id=None, *, is_async=False):
    """Claim the job (enqueue one first when none is given); a context bound to its attempt."""
    if job_id is None:
        job_id = enqueue(driver)
    job = claim_one(driver)
    assert job.id == job_id
    ctx = JobContext(job_id=job.id, name=job.name, attempt=job.attempt)
    bind_steps(
        ctx, driver=driver, claim_token=job.claim_token, is_async=is_async, writer=InlineWriter()
    )
    return ctx, job


def retried(driver, job):
    assert nack("retry")(driver, job.id, job.claim_token)
    return attempt_ctx(driver, job.id)


def make_due(job_id):
    Job.objects.filter(id=job_id).update(run_at=datetime.now(UTC) - timedelta(minutes=1))


def stored(driver, job_id):
    return {s.name: (s.status, s.output) for s in driver.step_get_many(job_id=job_id)}


def test_a_step_returns_the_json_form_of_what_it_stored(driver):
    ctx, job = attempt_ctx(driver)
    assert ctx.step.run("pair", lambda: (1, 2)) == [1, 2]
    assert ctx.step.run("map", lambda: {"k": (True, None)}) == {"k": [True, None]}
    assert stored(driver, job.id) == {
        "pair": ("done", [1, 2]),
        "map": ("done", {"k": [True, None]}),
    }


def test_one_statement_per_executed_step_and_none_per_replayed_one(
    driver, django_assert_num_queries
):
    calls = []

    def body(ctx):
        return [ctx.step.run(f"s{n}", lambda n=n: calls.append(n) or n) for n in range(5)]

    ctx, job = attempt_ctx(driver)
    with django_assert_num_queries(1 + 5):  # the one read of the stored steps, then 5 writes
        assert body(ctx) == [0, 1, 2, 3, 4]
    ctx, job = retried(driver, job)
    with django_assert_num_queries(1):  # the read; every step replayed
        assert body(ctx) == [0, 1, 2, 3, 4]
    assert calls == [0, 1, 2, 3, 4], "a replayed step does not call its function"


def test_a_replay_by_name_survives_reordered_steps(driver):
    ctx, job = attempt_ctx(driver)
    ctx.step.run("a", lambda: "A")
    ctx.step.run("b", lambda: "B")
    ctx, job = retried(driver, job)
    assert ctx.step.run("b", lambda: "other") == "B"
    assert ctx.step.run("a", lambda: "other") == "A"
    assert ctx.step.run("c", lambda: "C") == "C"


@pytest.mark.parametrize(
    ("call", "rule"),
    [
        (lambda s: s.run("", lambda: 1), "step-name"),
        (lambda s: s.run("x" * 201, lambda: 1), "step-name"),
        (lambda s: s.run(7, lambda: 1), "step-name"),
        (lambda s: s.run("bad", lambda: object()), "json-type"),
        (lambda s: s.run("nan", lambda: math.nan), None),
        (lambda s: s.run("fn", "not callable"), "fn-callable"),
        (lambda s: s.sleep("neg", -1), "duration-range"),
        (lambda s: s.sleep("inf", math.inf), "duration-range"),
        (lambda s: s.sleep("nan", math.nan), "duration-range"),
        (lambda s: s.sleep("text", "5"), "duration-type"),
        (lambda s: s.sleep_until("naive", datetime(2030, 1, 1)), "wake-aware"),
        (lambda s: s.wait_for_event("w", "ok", timeout=-5), "duration-range"),
    ],
)
def test_refusals_name_the_step_and_the_rule_and_write_nothing(driver, call, rule):
    ctx, job = attempt_ctx(driver)
    with pytest.raises(StepInvalid) as raised:
        call(ctx.step)
    assert raised.value.code == "X_STEP_INVALID"
    if rule is not None:
        assert raised.value.context["rule"] == rule
    assert stored(driver, job.id) == {}
    assert get(driver, job.id).state == JobState.RUNNING


@pytest.mark.parametrize(
    ("event", "key"), [("", None), ("has space", None), ("ok", ""), ("ok", "-x"), (5, None)]
)
def test_an_event_or_key_breaking_the_name_rule_is_refused(driver, event, key):
    ctx, job = attempt_ctx(driver)
    with pytest.raises(EventInvalid) as raised:
        ctx.step.wait_for_event("w", event, key=key, timeout=5)
    assert raised.value.code == "X_EVENT_INVALID"
    assert stored(driver, job.id) == {}


def test_a_name_used_twice_in_one_run_is_refused(driver):
    ctx, _job = attempt_ctx(driver)
    ctx.step.run("same", lambda: 1)
    with pytest.raises(StepInvalid, match="'same' is used twice"):
        ctx.step.run("same", lambda: 2)
    with pytest.raises(StepInvalid, match="used twice"):
        ctx.step.sleep("same", 1)


def test_a_stored_step_of_another_kind_or_event_is_a_mismatch(driver):
    ctx, job = attempt_ctx(driver)
    ctx.step.run("a", lambda: 1)
    with pytest.raises(StepSuspended):
        ctx.step.wait_for_event("w", "paid", key="k1", timeout=60)
    make_due(job.id)
    ctx, job = attempt_ctx(driver, job.id)
    with pytest.raises(StepMismatch, match="stored as a run step"):
        ctx.step.sleep("a", 1)
    with pytest.raises(StepMismatch, match="event 'paid' with key 'k1'") as raised:
        ctx.step.wait_for_event("w", "paid", key="k2", timeout=60)
    assert raised.value.code == "X_STEP_MISMATCH"


def test_once_writes_started_first_and_is_never_run_twice(driver):
    ctx, job = attempt_ctx(driver)
    runs = []

    def charge():
        runs.append(1)
        assert stored(driver, job.id) == {"charge": ("started", None)}
        raise RuntimeError("the process died here")

    with pytest.raises(RuntimeError):
        ctx.step.once("charge", charge)
    ctx, job = retried(driver, job)
    with pytest.raises(StepOnceInterrupted) as raised:
        ctx.step.once("charge", charge)
    assert raised.value.code == "X_STEP_ONCE_INTERRUPTED"
    assert runs == [1]


def test_once_done_replays_its_output(driver):
    ctx, job = attempt_ctx(driver)
    assert ctx.step.once("charge", lambda: {"id": "ch_1"}) == {"id": "ch_1"}
    ctx, job = retried(driver, job)
    assert ctx.step.once("charge", lambda: pytest.fail("ran twice")) == {"id": "ch_1"}


def test_a_write_after_the_lease_was_lost_raises_and_lands_nothing(driver):
    ctx, job = attempt_ctx(driver)
    assert driver.job_cancel(job_id=job.id)
    with pytest.raises(JobLeaseLost) as raised:
        ctx.step.run("late", lambda: 1)
    assert raised.value.code == "X_JOB_LEASE_LOST"
    assert stored(driver, job.id) == {}


def test_a_cancelled_attempt_writes_nothing_more(driver):
    ctx, job = attempt_ctx(driver)
    ctx.step.run("a", lambda: 1)
    ctx.cancelled.set()
    ran = []
    with pytest.raises(JobAborted):
        ctx.step.run("b", lambda: ran.append(1))
    assert stored(driver, job.id) == {"a": ("done", 1)}


def test_sleep_suspends_the_job_and_a_replay_after_the_wake_goes_on(driver):
    ctx, job = attempt_ctx(driver)
    ctx.step.run("a", lambda: 1)
    with pytest.raises(StepSuspended) as raised:
        ctx.step.sleep("nap", timedelta(hours=1))
    assert raised.value.step == "nap"
    record = get(driver, job.id)
    assert (record.state, record.attempt, record.errors) == (JobState.QUEUED, 0, [])
    assert record.run_at == raised.value.wake_at
    # Past its wake time (moved back, as the test transaction's clock stands still).
    past = datetime.now(UTC) - timedelta(minutes=1)
    JobStep.objects.filter(job_id=job.id, name="nap").update(wait_until=past)
    Job.objects.filter(id=job.id).update(run_at=past)
    ctx, job = attempt_ctx(driver, job.id)
    assert job.attempt == 1, "the suspension gave the attempt back"
    assert ctx.step.run("a", lambda: pytest.fail("replayed")) == 1
    assert ctx.step.sleep("nap", timedelta(hours=1)) is None
    assert ctx.step.run("b", lambda: 2) == 2


def test_a_direct_call_stores_nothing_and_does_not_wait():
    ctx = JobContext.for_direct_call("tests.direct")
    assert ctx.step.run("a", lambda: (1,)) == [1]
    assert ctx.step.once("b", lambda: "x") == "x"
    assert ctx.step.sleep("c", 3600) is None
    assert ctx.step.wait_for_event("d", "ev", timeout=5) is None
    with pytest.raises(StepInvalid):
        ctx.step.run("a", lambda: 1)


def test_async_steps_are_awaited_and_replay_the_same():
    driver = MemoryDriver()
    job_id = enqueue(driver)
    ctx, job = attempt_ctx(driver, job_id, is_async=True)

    async def body(ctx):
        async def fetch():
            await asyncio.sleep(0)
            return (3, 4)

        first = await ctx.step.run("fetch", fetch)
        second = await ctx.step.run("sync", lambda: {"n": 1})
        return first, second

    assert asyncio.run(body(ctx)) == ([3, 4], {"n": 1})
    assert nack("retry")(driver, job.id, job.claim_token)
    ctx, job = attempt_ctx(driver, job.id, is_async=True)
    assert asyncio.run(body(ctx)) == ([3, 4], {"n": 1})
    with pytest.raises(StepSuspended):
        asyncio.run(ctx.step.sleep("nap", 60))
    assert get(driver, job.id).state == JobState.QUEUED


def test_an_async_step_over_its_timeout_stores_nothing():
    driver = MemoryDriver()
    ctx, job = attempt_ctx(driver, enqueue(driver), is_async=True)

    async def slow():
        await asyncio.sleep(5)

    with pytest.raises(TimeoutError):
        asyncio.run(ctx.step.run("slow", slow, timeout=0.05))
    assert driver.step_get_many(job_id=job.id) == []


def test_unknown_ids_are_not_steps():
    assert PostgresDriver().step_get_many(job_id=uuid.uuid4()) == []


def test_an_unwind_cut_short_repeats_no_compensation_on_the_next_run(driver):
    undone = []
    crash = {"at": 2}

    def body(ctx):
        for n in (1, 2, 3):

            def back(output, n=n):
                if crash["at"] == n:
                    raise RuntimeError("the worker died in the unwind")
                undone.append((n, output))

            ctx.step.run(f"s{n}", lambda n=n: n * 10, compensate=back)

    ctx, job = attempt_ctx(driver)
    body(ctx)
    with pytest.raises(RuntimeError):
        ctx.step.unwind()
    assert undone == [(3, 30)]
    assert stored(driver, job.id) == {
        "s1": ("done", 10),
        "s2": ("done", 20),
        "s3": ("compensated", 30),
    }
    crash["at"] = None
    ctx, job = retried(driver, job)
    body(ctx)
    ctx.step.unwind()
    assert undone == [(3, 30), (2, 20), (1, 10)], "no compensation ran twice"
    assert {status for status, _ in stored(driver, job.id).values()} == {"compensated"}


def test_an_unwind_called_again_in_the_same_run_repeats_no_compensation(driver):
    """The steps this run executed keep no record of their own; the unwind's compensated mark
    is what a second unwind of the same run reads."""
    undone = []
    crash = {"at": 2}

    def back(n, output):
        if crash["at"] == n:
            raise RuntimeError("a compensation failed")
        undone.append((n, output))

    ctx, job = attempt_ctx(driver)
    for n in (1, 2, 3):
        ctx.step.run(f"s{n}", lambda n=n: n * 10, compensate=lambda out, n=n: back(n, out))
    with pytest.raises(RuntimeError):
        ctx.step.unwind()
    crash["at"] = None
    ctx.step.unwind()
    assert undone == [(3, 30), (2, 20), (1, 10)], "no compensation ran twice"
    assert {status for status, _ in stored(driver, job.id).values()} == {"compensated"}
