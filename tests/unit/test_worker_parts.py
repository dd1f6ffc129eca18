"""The worker's small parts, without a database: an attempt's begin rule, the pool's idle
count, the idle backoff's due times, an attempt freed by reference counting alone."""

from __future__ import annotations

import gc
import threading
import time
import uuid
import weakref
from functools import partial

from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.model.step_api import Steps
from ultimat3_jobs.runtime.common.backoff import IdleBackoff
from ultimat3_jobs.runtime.common.pool import BodyPool
from ultimat3_jobs.runtime.worker.attempt import Attempt, attempts_for
from ultimat3_jobs.types import ClaimedJob


def make_attempt() -> Attempt:
    job = ClaimedJob(
        id=uuid.uuid4(),
        name="tests.noop",
        queue="default",
        input={},
        attempt=1,
        max_attempts=3,
        claim_token=uuid.uuid4(),
        priority=0,
        tenant_id=None,
    )
    return Attempt(job=job, definition=None, ctx=JobContext(job_id=job.id, name=job.name))


def test_a_body_begins_only_while_its_attempt_is_open() -> None:
    attempt = make_attempt()
    assert attempt.begin()
    assert attempt.began

    for end in (Attempt.take_settle, Attempt.time_out, Attempt.lose):
        attempt = make_attempt()
        end(attempt)
        assert not attempt.begin(), end.__name__
        assert not attempt.began


def test_timing_out_or_losing_an_attempt_cancels_its_body() -> None:
    for end in (Attempt.time_out, Attempt.lose):
        cancelled: list[str] = []
        attempt = make_attempt()
        assert attempt.begin(cancel=partial(cancelled.append, "cancel"))
        end(attempt)
        assert cancelled == ["cancel"]
        assert attempt.ctx.cancelled.is_set()


def test_the_pool_counts_a_thread_busy_until_its_callable_returns() -> None:
    pool = BodyPool(2, name="test-pool")
    release = threading.Event()
    try:
        assert pool.idle() == 2
        held = pool.submit(release.wait, 10)
        assert pool.idle() == 1
        seen: list[int] = []
        done = pool.submit(lambda: None)
        done.add_done_callback(lambda _: seen.append(pool.idle()))
        done.result(5)
        assert seen == [1]  # idle again before its callbacks run; the held one is not
        release.set()
        held.result(5)
        assert pool.idle() == 2
    finally:
        release.set()
        pool.shutdown(timeout=5)


def test_the_pool_starts_a_thread_only_when_no_idle_one_can_take_the_callable() -> None:
    pool = BodyPool(4, name="test-lazy-pool")

    def threads() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("test-lazy-pool")]

    release = threading.Event()
    together = threading.Barrier(4)  # three callables running at once, and this test
    try:
        assert threads() == []  # nothing submitted, nothing started
        pool.submit(lambda: None).result(5)
        pool.submit(lambda: None).result(5)
        assert len(threads()) == 1  # the first one's thread, idle again, took it
        held = [pool.submit(lambda: (together.wait(10), release.wait(10))) for _ in range(3)]
        together.wait(10)
        assert len(threads()) == 3
        held += [pool.submit(release.wait, 10) for _ in range(3)]
        assert len(threads()) == 4  # never more than the pool's size
    finally:
        release.set()
        assert pool.shutdown(timeout=10) == []
    assert all(future.done() for future in held)
    assert threads() == []


def test_a_due_time_sooner_than_the_wait_cuts_it() -> None:
    backoff = IdleBackoff(floor=8.0, ceiling=8.0, ceiling_with_wake=8.0)
    now = time.monotonic()
    backoff.due(now + 0.5)
    backoff.due(now + 100)  # past every ceiling: the poll finds it, nothing is kept
    assert backoff.next(looked_at=now) <= 0.5
    # A look that began once it was due has seen it: the waits are the backoff's again.
    assert backoff.next(looked_at=now + 0.6) == 8.0


def test_an_attempt_is_freed_without_the_cycle_collector() -> None:
    """Built as the worker builds one (context, step API, progress callback), an attempt is in
    no reference cycle: dropped, it goes at once, not at the collector's next pass."""
    reported: list[object] = []
    (attempt,) = attempts_for(
        [make_attempt().job],
        registry=registry,
        driver=MemoryDriver(),
        on_progress=lambda attempt, value: reported.append(value),
    )
    attempt.ctx.progress(1, 2)
    assert reported == [{"current": 1, "total": 2}]
    gone = weakref.ref(attempt)
    gc.disable()
    try:
        del attempt
        assert gone() is None
    finally:
        gc.enable()


def test_an_attempts_steps_are_built_on_first_use_bound_to_its_claim() -> None:
    """A body that never touches ``ctx.step`` (most) costs no step state; the first use binds
    it to the attempt's claim. Waiting to be built, the context is in no reference cycle."""
    job = make_attempt().job
    (attempt,) = attempts_for([job], registry=registry, driver=MemoryDriver(), on_progress=print)
    ctx = attempt.ctx
    assert ctx._step is None
    assert ctx._bind_step is not None
    gone = weakref.ref(ctx._bind_step)  # the context holds the only reference to its binder
    gc.disable()
    try:
        del attempt, ctx
        assert gone() is None
    finally:
        gc.enable()
    (attempt,) = attempts_for([job], registry=registry, driver=MemoryDriver(), on_progress=print)
    steps = attempt.ctx.step
    assert isinstance(steps, Steps)
    assert steps._state is not None
    assert (steps._state.job_id, steps._state.claim_token) == (job.id, job.claim_token)
    assert attempt.ctx.step is steps
