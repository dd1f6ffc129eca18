"""Jobs the testing-helper tests enqueue and run (registered when this module is imported)."""

from __future__ import annotations

import asyncio
from typing import Any

from ultimat3_jobs import Retry, Terminal, cron, job
from ultimat3_jobs.model.context import current_tenant
from ultimat3_jobs.model.registry import registry

CALLS: list[tuple[str, Any]] = []
"""(job name, what the body saw) per body run in this process."""

NO_WAIT = Retry(attempts=3, backoff_base_seconds=0, backoff_cap_seconds=0, jitter=0)
SLOW_RETRY = Retry(attempts=2, backoff_base_seconds=600, backoff_cap_seconds=600, jitter=0)


@job(name="testing.greet", queue="greetings", tenant=lambda i: i.get("org"), sensitive=["card"])
def greet(ctx: Any, *, who: str, org: str | None = None, card: str = "", tags: Any = None) -> str:
    CALLS.append(("testing.greet", {"who": who, "tenant": current_tenant()}))
    ctx.progress(1, 1)
    return f"hello {who}"


@job(name="testing.other", tenant="none")
def other(ctx: Any, *, n: int = 0) -> int:
    CALLS.append(("testing.other", n))
    return n


@job(name="testing.fails_then_works", tenant="none", retry=NO_WAIT)
def fails_then_works(ctx: Any) -> int:
    CALLS.append(("testing.fails_then_works", ctx.attempt))
    if ctx.attempt < 2:
        raise RuntimeError(f"attempt {ctx.attempt} fails on purpose")
    return ctx.attempt


@job(name="testing.fails_slowly", tenant="none", retry=SLOW_RETRY)
def fails_slowly(ctx: Any) -> None:
    CALLS.append(("testing.fails_slowly", ctx.attempt))
    raise RuntimeError(f"attempt {ctx.attempt} fails on purpose")


@job(name="testing.dropped", tenant="none", retry=Retry(attempts=1), dead_letter=False)
def dropped(ctx: Any) -> None:
    raise RuntimeError("always fails")


@job(name="testing.terminal", tenant="none", retry=NO_WAIT)
def terminal(ctx: Any) -> None:
    CALLS.append(("testing.terminal", ctx.attempt))
    raise Terminal("never works")


@job(name="testing.chain", tenant="none")
def chain(ctx: Any, *, then: int) -> None:
    """Enqueues ``testing.other`` (on another queue) from its body."""
    CALLS.append(("testing.chain", then))
    other.using(queue="chained").enqueue(n=then)


@job(name="testing.forever", tenant="none")
def forever(ctx: Any) -> None:
    """Enqueues itself again, due now: a loop run_enqueued must refuse."""
    forever.enqueue()


@job(name="testing.async", tenant="none")
async def async_job(ctx: Any, *, value: int) -> int:
    await asyncio.sleep(0)
    CALLS.append(("testing.async", value))
    return value * 2


@job(name="testing.writes", tenant="none", retry=Retry(attempts=1))
def writes(ctx: Any, *, label: str, fail: bool = False) -> None:
    """Writes an Effect row, then fails when asked."""
    from tests.testapp.models import Effect

    Effect.objects.create(job_id=ctx.job_id, attempt=ctx.attempt, worker_pid=0, label=label)
    if fail:
        raise RuntimeError("fails after writing")


SETTLED: list[tuple[str, str]] = []


def _settled(ctx: Any, ending: str) -> None:
    SETTLED.append((ctx.name, ending))


@job(name="testing.hooked", tenant="none", on_settled=_settled)
def hooked(ctx: Any) -> None:
    CALLS.append(("testing.hooked", None))


@cron(
    name="testing.nightly", cron="0 3 * * *", tz="Europe/Paris", catch_up="run-once", tenant="none"
)
def nightly(ctx: Any) -> None:
    CALLS.append(("testing.nightly", None))


@cron(name="testing.hourly", cron="0 * * * *", tz="UTC", catch_up="all", tenant="none")
def hourly(ctx: Any) -> None:
    CALLS.append(("testing.hourly", None))


CRON_TASKS = (nightly, hourly)
# Kept out of the project's registry except while a test asks for them (the ``cron_tasks``
# fixture): a scheduler started by another test must not fire them.
for _handle in CRON_TASKS:
    registry.unregister(_handle.name)
