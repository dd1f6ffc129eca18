"""Jobs with keyed concurrency caps (1 and 3) for the limits chaos test; declared in the worker
subprocesses only (``apps.py`` imports this module when the app is ready), so no other process
of the suite registers a limit its driver may not keep."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ultimat3_jobs import Concurrency, Retry, job

# Killed runs are retried: a rescued attempt counts, so leave room for several kills per job.
RETRY = Retry(attempts=30, backoff_base_seconds=0.05, jitter=0)


@job(
    name="process.limited_one",
    tenant="none",
    retry=RETRY,
    concurrency=Concurrency(key=lambda input: input["key"], limit=1),
)
def limited_one(ctx: Any, *, key: str, sleep: float = 0.02) -> str:
    time.sleep(sleep)
    return key


@job(
    name="process.limited_three",
    tenant="none",
    retry=RETRY,
    concurrency=Concurrency(key=lambda input: input["key"], limit=3),
)
def limited_three(ctx: Any, *, key: str, sleep: float = 0.02) -> str:
    time.sleep(sleep)
    return key


@job(
    name="process.limited_traced",
    tenant="none",
    retry=RETRY,
    concurrency=Concurrency(key=lambda input: input["key"], limit=1),
)
def limited_traced(ctx: Any, *, key: str, trace: str, sleep: float = 0.3) -> str:
    """``limited_one`` that leaves the wall-clock moments its body began and ended in files
    under ``trace`` (one pair per attempt): the bodies' own intervals, not the store's."""
    name = Path(trace) / f"{ctx.job_id}-{ctx.attempt}"
    name.with_suffix(".start").write_text(repr(time.time()))
    time.sleep(sleep)
    name.with_suffix(".end").write_text(repr(time.time()))
    return key
