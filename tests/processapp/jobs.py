"""Bodies for the process tests; declared in the worker subprocesses only."""

from __future__ import annotations

import os
import time
from typing import Any

from ultimat3_jobs import Retry, job

STALE_WRITER = "process.stale_writer"


@job(name=STALE_WRITER, tenant="none", retry=Retry(attempts=3))
def stale_writer(
    ctx: Any, *, first_sleep: float = 8.0, cooperative: bool = False
) -> dict[str, Any]:
    """Writes an effect row; on its first attempt only, then sleeps ``first_sleep`` seconds
    (cut short by a cancel only when ``cooperative``); then reports progress and answers which
    attempt and process ran it. A stale first attempt therefore still tries to write its
    progress and its result after a later attempt has settled the job."""
    from tests.testapp.models import Effect

    Effect.objects.create(
        job_id=ctx.job_id, attempt=ctx.attempt, worker_pid=os.getpid(), label="stale_writer"
    )
    if ctx.attempt == 1:
        if cooperative:
            ctx.cancelled.wait(first_sleep)
        else:
            time.sleep(first_sleep)
    ctx.progress(1, 1, attempt=ctx.attempt, pid=os.getpid())
    return {"attempt": ctx.attempt, "pid": os.getpid()}
