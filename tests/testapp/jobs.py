"""Jobs the test suite enqueues; autodiscovered like any app's jobs.py."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from typing import Any

from ultimat3_jobs import Retry, Terminal, cron, job
from ultimat3_jobs.errors import JobsError
from ultimat3_jobs.model.context import current_tenant


@job(name="tests.noop", tenant="none")
def noop(ctx: Any) -> None:
    """Does nothing: the cheapest job there is."""


@job(name="tests.echo", queue="default", tenant="none", retry=Retry(attempts=4))
def echo(ctx: Any, **input: Any) -> dict[str, Any]:
    """Answers its input; takes any keyword."""
    return dict(input)


@job(name="tests.add", queue="math", tenant=lambda input: input.get("org"))
def add(ctx: Any, *, a: int, b: int, org: str | None = None) -> int:
    return a + b


@job(name="tests.tenant_strict", tenant=lambda input: input["org"])
def tenant_strict(ctx: Any, **input: Any) -> None:
    """Its tenant is the input's org, which must be there."""


@job(
    name="tests.secret",
    tenant="none",
    dead_letter=False,
    sensitive=["api_token"],
    retry=Retry(attempts=2, backoff_base_seconds=0.5, backoff_cap_seconds=1, jitter=0),
)
def secret(ctx: Any, *, account: int, api_token: str) -> None:
    """Holds a sensitive field."""


# -- bodies the worker tests run --------------------------------------------------------------


FAST_RETRY = Retry(attempts=3, backoff_base_seconds=0.01, backoff_cap_seconds=0.05, jitter=0)
SETTLED: list[tuple[str, str, int]] = []
"""(job id, ending, attempt) per on_settled call in this process."""


def _record_settled(ctx: Any, ending: str) -> None:
    SETTLED.append((str(ctx.job_id), ending, ctx.attempt))


def _effect(ctx: Any, label: str = "") -> None:
    from tests.testapp.models import Effect

    Effect.objects.create(
        job_id=ctx.job_id, attempt=ctx.attempt, worker_pid=os.getpid(), label=label
    )


@job(name="tests.record", tenant=lambda i: i.get("org"), on_settled=_record_settled)
def record(ctx: Any, *, n: int = 0, sleep: float = 0.0, org: str | None = None) -> dict[str, Any]:
    """Writes an effect row, optionally after a sleep that a cancel cuts short."""
    if sleep:
        ctx.cancelled.wait(sleep)
    _effect(ctx, label=current_tenant() or "")
    return {"n": n, "attempt": ctx.attempt}


@job(
    name="tests.record_quick_retry",
    tenant=lambda i: i.get("org"),
    retry=Retry(attempts=6, backoff_base_seconds=0.05, backoff_cap_seconds=0.2),
)
def record_quick_retry(
    ctx: Any, *, n: int = 0, sleep: float = 0.0, org: str | None = None
) -> dict[str, Any]:
    """``tests.record`` with a short retry backoff: a rescued attempt is due again at once."""
    result: dict[str, Any] = record.definition.fn(ctx, n=n, sleep=sleep, org=org)
    return result


@job(name="tests.flaky", tenant="none", retry=FAST_RETRY, on_settled=_record_settled)
def flaky(ctx: Any, *, succeed_on: int) -> int:
    """Fails until attempt ``succeed_on``."""
    _effect(ctx)
    if ctx.attempt < succeed_on:
        raise RuntimeError(f"attempt {ctx.attempt} fails on purpose")
    return ctx.attempt


@job(
    name="tests.flaky_dropped",
    tenant="none",
    retry=FAST_RETRY,
    dead_letter=False,
    on_settled=_record_settled,
)
def flaky_dropped(ctx: Any) -> None:
    raise RuntimeError("always fails")


@job(name="tests.terminal", tenant="none", retry=FAST_RETRY, on_settled=_record_settled)
def terminal(ctx: Any) -> None:
    raise Terminal("this input can never work")


@job(name="tests.slow", tenant="none", timeout=0.3, retry=Retry(attempts=1))
def slow(ctx: Any, *, cooperative: bool = True, seconds: float = 5.0) -> str:
    """Runs past its timeout; stops at the cancel when cooperative."""
    if cooperative:
        ctx.cancelled.wait(seconds)
    else:
        time.sleep(seconds)
    return "finished"


@job(name="tests.waits_for_cancel", tenant="none")
def waits_for_cancel(ctx: Any, *, seconds: float = 30.0) -> str:
    _effect(ctx, label="started")
    ctx.cancelled.wait(seconds)
    return "cancelled" if ctx.cancelled.is_set() else "done"


@job(name="tests.progress", tenant="none")
def progress(ctx: Any, *, steps: int = 3) -> int:
    for step in range(1, steps + 1):
        ctx.progress(step, steps)
    return steps


@job(name="tests.raises_text", tenant="none", retry=Retry(attempts=1))
def raises_text(ctx: Any) -> None:
    """Fails with a message jsonb could not hold as it is."""
    raise Terminal("nul \x00 and a lone \ud800 surrogate")


@job(name="tests.not_json", tenant="none")
def not_json(ctx: Any) -> Any:
    return {1, 2, 3}


@job(name="tests.async_echo", tenant="none")
async def async_echo(ctx: Any, *, value: Any = None) -> Any:
    await asyncio.sleep(0)
    return {"value": value, "attempt": ctx.attempt}


@job(name="tests.async_blocks_loop", tenant="none")
async def async_blocks_loop(ctx: Any, *, seconds: float = 1.0) -> None:
    """Holds the worker's event loop (a blocking call in an async body): the async bodies
    claimed beside it wait to start."""
    time.sleep(seconds)


@job(
    name="tests.exit_hard",
    tenant="none",
    retry=Retry(attempts=3, backoff_base_seconds=5, jitter=0),
)
def exit_hard(ctx: Any) -> None:
    """Kills its own process: a poison job."""
    _effect(ctx)
    os._exit(1)


@job(name="tests.hangs_on_socket", tenant="none", timeout=1, retry=Retry(attempts=1))
def hangs_on_socket(ctx: Any, *, port: int) -> None:
    """Reads from a local server that never answers, with no socket timeout: it ignores its
    cancel and holds its thread until the test closes the connection."""
    _effect(ctx, label="hang")
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(None)
        sock.recv(1)


@job(name="tests.timed_record", tenant="none", timeout=2, retry=FAST_RETRY)
def timed_record(ctx: Any, *, n: int = 0) -> int:
    """A quick body that declares a timeout it never reaches."""
    _effect(ctx, label="run")
    return n


ASYNC_CANCELLED: list[tuple[str, int]] = []
"""(job id, attempt) per async body that got CancelledError, in this process."""


@job(
    name="tests.async_sleeps",
    tenant="none",
    timeout=0.5,
    retry=Retry(attempts=2, backoff_base_seconds=0.01, jitter=0),
    on_settled=_record_settled,
)
async def async_sleeps(ctx: Any, *, seconds: float = 60.0) -> str:
    """Awaits far past its timeout; records the cancel it gets."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        ASYNC_CANCELLED.append((str(ctx.job_id), ctx.attempt))
        raise
    return "slept"


@job(
    name="tests.fails_once_slowly",
    tenant="none",
    retry=Retry(attempts=2, backoff_base_seconds=0.2, backoff_cap_seconds=0.2, jitter=0),
)
def fails_once_slowly(ctx: Any, *, seconds: float) -> int:
    """Attempt 1 runs ``seconds`` (long enough for an idle loop to back off), then fails; its
    retry, due 0.2 s later, succeeds."""
    if ctx.attempt == 1:
        time.sleep(seconds)
        raise RuntimeError("the first attempt fails on purpose")
    return ctx.attempt


@cron(name="tests.every_second", cron="* * * * * *", tz="UTC", tenant="none")
def every_second(ctx: Any) -> None:
    """Fires every second while a scheduler leads."""


@cron(
    name="tests.paris_daily",
    cron="30 2 * * *",
    tz="Europe/Paris",
    catch_up="run-once",
    tenant="none",
)
def paris_daily(ctx: Any) -> None:
    """Fires at 02:30 Paris time, a time that does not exist once a year."""


@job(name="tests.traced", tenant="none")
def traced(ctx: Any, **input: Any) -> str | None:
    """Answers the traceparent its enqueue stamped."""
    return ctx.traceparent


REFUSED_AFTER_CANCEL: list[tuple[str, str]] = []
"""(job id, X_* code) per enqueue a cancelled body tried, in this process."""


def _enqueue_from_body(ctx: Any, many: bool) -> None:
    try:
        if many:
            echo.enqueue_many([{"n": 1}, {"n": 2}])
        else:
            echo.enqueue(n=1)
    except JobsError as exc:
        REFUSED_AFTER_CANCEL.append((str(ctx.job_id), exc.code))
        raise


@job(name="tests.enqueues_after_cancel", tenant="none", retry=Retry(attempts=1))
def enqueues_after_cancel(ctx: Any, *, many: bool = False) -> str:
    """Waits for its cancel, then tries to enqueue as if it had not noticed."""
    _effect(ctx, label="started")
    ctx.cancelled.wait(30)
    _enqueue_from_body(ctx, many)
    return "enqueued"


@job(name="tests.async_enqueues_after_cancel", tenant="none", retry=Retry(attempts=1))
async def async_enqueues_after_cancel(ctx: Any, *, many: bool = False) -> str:
    """The async twin: its refusal comes before any database call. The worker cancels the task
    of a cancelled attempt at its next ``await``; a clean-up that enqueues is refused too."""
    REFUSED_AFTER_CANCEL.append((str(ctx.job_id), "started"))
    try:
        while not ctx.cancelled.is_set():
            await asyncio.sleep(0.02)
    except asyncio.CancelledError:
        _enqueue_from_body(ctx, many)
        raise
    _enqueue_from_body(ctx, many)
    return "enqueued"
