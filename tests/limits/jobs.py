"""Jobs with limits, kept out of the global registry except while a test of this package runs
(``conftest.py``): a driver without a lease store elsewhere in the suite never meets them."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from ultimat3_jobs import Concurrency, Rate, job
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.model.context import current_tenant
from ultimat3_jobs.model.limits import concurrency_key
from ultimat3_jobs.models import Job

SETTLED: list[tuple[str, str]] = []


def _settled(ctx: Any, ending: str) -> None:
    SETTLED.append((str(ctx.job_id), ending))


@job(name="tests.limits.one_at_a_time", tenant="none", concurrency=1)
def one_at_a_time(ctx: Any, *, sleep: float = 0.02) -> None:
    time.sleep(sleep)


@job(
    name="tests.limits.per_key",
    tenant="none",
    concurrency=Concurrency(key=lambda input: input["key"], limit=1),
)
def per_key(ctx: Any, *, key: str, sleep: float = 0.02) -> None:
    time.sleep(sleep)


@job(
    name="tests.limits.per_key_three",
    tenant="none",
    concurrency=Concurrency(key=lambda input: input["key"], limit=3),
)
def per_key_three(ctx: Any, *, key: str, sleep: float = 0.02) -> None:
    time.sleep(sleep)


@job(
    name="tests.limits.per_key_returns",
    tenant="none",
    concurrency=Concurrency(key=lambda input: input["key"], limit=1),
)
def per_key_returns(ctx: Any, *, key: str, result: Any = None, sleep: float = 0.02) -> Any:
    time.sleep(sleep)
    return result


@job(
    name="tests.limits.exclusive",
    tenant="none",
    concurrency=Concurrency(key=lambda input: input["key"], limit=1, when_busy="fail"),
    on_settled=_settled,
)
def exclusive(ctx: Any, *, key: str) -> str:
    return key


@job(
    name="tests.limits.bad_key",
    tenant="none",
    concurrency=Concurrency(key=lambda input: input.get("key"), limit=1),
    on_settled=_settled,
)
def bad_key(ctx: Any, **input: Any) -> None: ...


@job(name="tests.limits.rated", tenant="none", rate=Rate(20, per="second"))
def rated(ctx: Any, *, n: int) -> int:
    return n


HOOK_CALLS: list[tuple[str, str, str | None]] = []
"""(job id, ending, the tenant the hook saw) per call of flaky_hook."""


def _flaky_hook(ctx: Any, ending: str) -> None:
    HOOK_CALLS.append((str(ctx.job_id), ending, current_tenant()))
    if len(HOOK_CALLS) < 3:
        raise RuntimeError(f"hook fails on call {len(HOOK_CALLS)}")


@job(name="tests.limits.hooked", tenant=lambda input: input["org"], on_settled=_flaky_hook)
def hooked(ctx: Any, *, org: str) -> str:
    return org


SEEN: dict[str, str] = {}
"""Per watched job id: its state in the store as a ``watcher`` body watching it started."""
GATE = threading.Event()
"""A ``watcher`` body run with ``gated`` ends only once this is set (the test sets it)."""


WATCHER_CAP = Concurrency(key=lambda input: input["key"], limit=1)


@job(name="tests.limits.watcher", tenant="none", concurrency=WATCHER_CAP)
def watcher(
    ctx: Any,
    *,
    key: str,
    watch: str | None = None,
    sleep: float = 0.02,
    operator: str | None = None,
    gated: bool = False,
) -> None:
    """Records the state of the job ``watch`` as the body starts; then, as an operator
    would, ``"release"``s its own key (``jobs leases release``) or ``"cancel"``s ``watch``;
    ``gated``: waits for :data:`GATE` before its ``sleep``."""
    if gated:
        assert GATE.wait(30), "the test never opened the gate"
    if watch is not None:
        SEEN.setdefault(watch, Job.objects.filter(id=watch).values_list("state", flat=True).get())
    if operator == "release":
        PostgresDriver().lease_release(key=concurrency_key(watcher.name, WATCHER_CAP, {"key": key}))
    elif operator == "cancel" and watch is not None:
        PostgresDriver().job_cancel(job_id=uuid.UUID(watch))
    time.sleep(sleep)


@job(name="tests.limits.capped", tenant="none", concurrency=64)
def capped(ctx: Any) -> None:
    """A no-op under a keyless cap wider than the worker: what a cap alone costs a run."""


HANDLES = [
    one_at_a_time,
    per_key,
    per_key_three,
    exclusive,
    bad_key,
    rated,
    hooked,
    watcher,
    capped,
]
