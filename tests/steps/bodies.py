"""Durable bodies for the step tests, declared on import (the tests import this module; the
worker runs in the test process). ``CALLS`` records each step function that ran, in order."""

from __future__ import annotations

import os
import threading
from typing import Any

from django.db import transaction

from ultimat3_jobs import Retry, job

FAST = Retry(attempts=3, backoff_base_seconds=0.01, backoff_cap_seconds=0.05, jitter=0)
ONE = Retry(attempts=1)

CALLS: list[tuple[str, str]] = []
"""(job id, what ran) for every step function and compensation that ran in this process."""
SETTLED: list[tuple[str, str, int]] = []
_lock = threading.Lock()


def called(ctx: Any, what: str, value: Any = None) -> Any:
    with _lock:
        CALLS.append((str(ctx.job_id), what))
    return value


def calls_of(job_id: Any) -> list[str]:
    with _lock:
        return [what for owner, what in CALLS if owner == str(job_id)]


def _settled(ctx: Any, ending: str) -> None:
    with _lock:
        SETTLED.append((str(ctx.job_id), ending, ctx.attempt))


def _effect(ctx: Any, label: str) -> None:
    from tests.testapp.models import Effect

    Effect.objects.create(
        job_id=ctx.job_id, attempt=ctx.attempt, worker_pid=os.getpid(), label=label
    )


@job(name="tests.s.sleeper", tenant="none", retry=FAST, on_settled=_settled)
def sleeper(ctx: Any, *, seconds: float) -> Any:
    """A step, a sleep, a step: answers both steps' results."""
    first = ctx.step.run("before", lambda: called(ctx, "before", (1, 2)))
    ctx.step.sleep("nap", seconds)
    second = ctx.step.run("after", lambda: called(ctx, "after", {"attempt": ctx.attempt}))
    return {"first": first, "second": second}


@job(name="tests.s.waiter", tenant="none", retry=FAST, on_settled=_settled)
def waiter(ctx: Any, *, event: str, key: str | None = None, timeout: float = 60) -> Any:
    """Waits for an event and answers its payload (``None`` at the timeout)."""
    got = ctx.step.wait_for_event("wait", event, key=key, timeout=timeout)
    called(ctx, f"resumed:{got!r}")
    return got


@job(name="tests.s.async_waiter", tenant="none", retry=FAST, on_settled=_settled)
async def async_waiter(ctx: Any, *, event: str, timeout: float = 60) -> Any:
    """``waiter`` as an ``async def`` body, with an async step before the wait."""

    async def first() -> int:
        called(ctx, "first")
        return 41

    value = await ctx.step.run("first", first)
    got = await ctx.step.wait_for_event("wait", event, timeout=timeout)
    return {"value": value + 1, "got": got}


@job(
    name="tests.s.saga",
    tenant="none",
    retry=Retry(attempts=2, backoff_base_seconds=0.01, jitter=0),
    on_settled=_settled,
)
def saga(ctx: Any, *, fail_at: int, steps: int = 4, compensation_fails: int = 0) -> Any:
    """``steps`` steps, each with a compensation; step ``fail_at`` raises on every attempt.
    The compensation of step ``compensation_fails`` raises."""
    for n in range(1, steps + 1):

        def forward(n: int = n) -> int:
            called(ctx, f"step{n}")
            if n == fail_at:
                raise RuntimeError(f"step {n} failed")
            return n * 10

        def back(output: int, n: int = n) -> None:
            called(ctx, f"undo{n}:{output}")
            if n == compensation_fails:
                raise ValueError(f"undo {n} failed")

        ctx.step.run(f"step{n}", forward, compensate=back)
    return "done"


@job(name="tests.s.rollback", tenant="none", retry=FAST)
def rollback(ctx: Any) -> Any:
    """Stores a step inside an atomic block that then rolls back (first attempt only)."""
    with transaction.atomic():
        _effect(ctx, "inside")
        value = ctx.step.run("inside", lambda: called(ctx, "inside", ctx.attempt))
        if ctx.attempt == 1:
            raise RuntimeError("roll the body's transaction back")
    return value


@job(
    name="tests.s.ten_steps",
    tenant="none",
    retry=Retry(attempts=50, backoff_base_seconds=0.01, backoff_cap_seconds=0.05, jitter=0),
)
def ten_steps(ctx: Any, *, steps: int = 10, pause: float = 0.0) -> int:
    """``steps`` steps, each writing one effect row inside its step function."""
    import time

    for n in range(steps):

        def effect(n: int = n) -> int:
            _effect(ctx, f"step{n}")
            if pause:
                time.sleep(pause)
            return n

        ctx.step.run(f"s{n}", effect)
    return steps


@job(name="tests.s.once_then_crash", tenant="none", retry=FAST)
def once_then_crash(ctx: Any) -> Any:
    """A once step whose function raises on its first run."""

    def charge() -> str:
        called(ctx, "charge")
        if ctx.attempt == 1:
            raise RuntimeError("died inside the once step")
        return "charged"

    return ctx.step.once("charge", charge)


@job(
    name="tests.s.slow_step",
    tenant="none",
    retry=Retry(attempts=5, backoff_base_seconds=0.01, jitter=0),
)
def slow_step(ctx: Any, *, seconds: float) -> Any:
    """One step that takes ``seconds`` (waits on the cancel), then stores an effect."""

    def slow() -> int:
        called(ctx, f"slow:{ctx.attempt}")
        threading.Event().wait(seconds)
        return ctx.attempt

    return ctx.step.run("slow", slow)
