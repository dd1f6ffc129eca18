"""Bodies for the worker tests of progress under a body's transaction and of settles the
database refuses. Declared on import (the tests import this module; the worker runs in the
test process)."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

from django.db import DatabaseError, connection, transaction

from ultimat3_jobs import Retry, job

REFUSED_KEY = "refuse_me"
"""A result holding this key is refused by the CHECK constraint the test adds to x_jobs."""

ONCE = Retry(attempts=1)


def _effect(ctx: Any, label: str) -> None:
    from tests.testapp.models import Effect

    Effect.objects.create(
        job_id=ctx.job_id, attempt=ctx.attempt, worker_pid=os.getpid(), label=label
    )


@job(name="tests.w.holds_transaction", tenant="none", retry=Retry(attempts=3))
def holds_transaction(ctx: Any, *, seconds: float) -> str:
    """Opens a transaction on the job database, reports progress inside it, and keeps it open
    for ``seconds``: its effect row commits only at the end."""
    with transaction.atomic():
        _effect(ctx, label="in the transaction")
        ctx.progress(1, 2, stage="inside the transaction")
        ctx.cancelled.wait(seconds)
    return "held"


@job(name="tests.w.async_progress", tenant="none")
async def async_progress(ctx: Any, *, seconds: float) -> str:
    """Reports progress, then keeps running for ``seconds`` on the event loop."""
    ctx.progress(3, 10, stage="async")
    for _ in range(int(seconds * 20)):
        if ctx.cancelled.is_set():
            break
        await asyncio.sleep(0.05)
    return "done"


@job(name="tests.w.refused_result", tenant="none", retry=Retry(attempts=3))
def refused_result(ctx: Any) -> dict[str, Any]:
    """Returns a result our serializer passes but the database (with the test's constraint)
    refuses."""
    _effect(ctx, label="refused result")
    ctx.progress(1, 1)
    return {REFUSED_KEY: True, "nested": {"value": "kept out"}}


class UnstorableError(RuntimeError):
    """An exception class named from outside data (as some client libraries name fault classes
    after a remote's fault codes) holding a NUL: jsonb refuses the error entry that names it."""


UnstorableError.__qualname__ = "RemoteFault[Unstorable\x00Name]"


@job(name="tests.w.raises_unstorable", tenant="none", retry=ONCE)
def raises_unstorable(ctx: Any) -> None:
    _effect(ctx, label="unstorable error")
    raise UnstorableError("the message is fine, the class name is not")


BODY_THREADS: list[tuple[str, int]] = []
"""(body, thread ident) per run of the connection bodies below, in this process."""


@job(name="tests.w.breaks_connection", tenant="none", retry=ONCE)
def breaks_connection(ctx: Any) -> str:
    """Leaves its thread's connection broken: autocommit off, its transaction aborted by a
    failed statement, never rolled back."""
    BODY_THREADS.append(("breaks", threading.get_ident()))
    transaction.set_autocommit(False)
    try:
        with connection.cursor() as cursor:
            cursor.execute("select 1 / 0")
    except DatabaseError:
        pass
    return "left broken"


@job(name="tests.w.writes_effect", tenant="none", retry=ONCE)
def writes_effect(ctx: Any) -> str:
    """Writes an effect row through the ORM, in autocommit as the default connection is."""
    BODY_THREADS.append(("writes", threading.get_ident()))
    _effect(ctx, label="written")
    return "written"
