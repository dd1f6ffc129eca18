"""Jobs that ask the policy of ``tests.testapp.tenancy``; registered only while a test of this
package runs (``conftest.py``)."""

from __future__ import annotations

from typing import Any

from tests.testapp import tenancy as policy
from ultimat3_jobs import job
from ultimat3_jobs.errors import JobTenantMismatch
from ultimat3_jobs.model.context import current_tenant

QUEUE = "tenancy"
SETTLED: list[tuple[str, str, str | None, str | None]] = []
"""(job name, ending, the policy's tenant, current_tenant()) for each on_settled call."""


def _settled(ctx: Any, ending: str) -> None:
    SETTLED.append((ctx.name, ending, policy.current(), current_tenant()))


def _verdict(ctx: Any, document: str) -> dict[str, Any]:
    return {
        "tenant": policy.current(),
        "current_tenant": current_tenant(),
        "ctx_tenant": ctx.tenant_id,
        "may_read": policy.may_read(document),
    }


@job(name="tests.tenancy.read", queue=QUEUE, tenant=lambda i: i["org"], on_settled=_settled)
def read(ctx: Any, *, org: str, document: str) -> dict[str, Any]:
    return _verdict(ctx, document)


@job(name="tests.tenancy.read_async", queue=QUEUE, tenant=lambda i: i["org"], on_settled=_settled)
async def read_async(ctx: Any, *, org: str, document: str) -> dict[str, Any]:
    return _verdict(ctx, document)


@job(name="tests.tenancy.system", queue=QUEUE, tenant="none", on_settled=_settled)
def system(ctx: Any, *, document: str) -> dict[str, Any]:
    return _verdict(ctx, document)


@job(name="tests.tenancy.stepped", queue=QUEUE, tenant=lambda i: i["org"])
def stepped(ctx: Any, *, org: str, document: str) -> dict[str, Any]:
    return ctx.step.run("ask", lambda: _verdict(ctx, document))  # type: ignore[no-any-return]


@job(name="tests.tenancy.stepped_async", queue=QUEUE, tenant=lambda i: i["org"])
async def stepped_async(ctx: Any, *, org: str, document: str) -> dict[str, Any]:
    return await ctx.step.run("ask", lambda: _verdict(ctx, document))  # type: ignore[no-any-return]


@job(name="tests.tenancy.spawn", queue=QUEUE, tenant=lambda i: i["org"])
def spawn(ctx: Any, *, org: str, other: str) -> dict[str, Any]:
    """Enqueues a follow-up for its own tenant, then tries one for ``other``."""
    child = read.enqueue(org=org, document=f"{org}-plan")
    try:
        read.enqueue(org=other, document=f"{other}-plan")
    except JobTenantMismatch as refused:
        return {"child": str(child.id), "other": refused.code}
    return {"child": str(child.id), "other": "written"}


HANDLES = (read, read_async, system, stepped, stepped_async, spawn)
