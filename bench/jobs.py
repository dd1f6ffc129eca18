"""The benchmark's own jobs: ``bench.stamp`` tells the side-by-side run when its body started;
``bench.steps``, ``bench.capped``, ``bench.backfill`` and ``bench.purge`` are the steps,
limits and factories phases' jobs."""

from __future__ import annotations

import time
from typing import Any

from django.db.models import F

from bench.peers.common import send_stamp
from ultimat3_jobs import job
from ultimat3_jobs.factories import backfill, finished_jobs, purge


@job(name="bench.stamp", tenant="none")
def stamp(ctx: Any, tag: int, port: int) -> None:
    started = time.time()
    send_stamp(port, tag, started)


def _nothing() -> None:
    return None


@job(name="bench.steps", tenant="none")
def steps(ctx: Any, steps: int) -> None:
    """A durable job of ``steps`` no-op steps: each one stored, none doing any work."""
    for n in range(steps):
        ctx.step.run(f"s{n}", _nothing)


@job(name="bench.capped", tenant="none", concurrency=64)
def capped(ctx: Any) -> None:
    """A no-op job under a fleet-wide cap of 64 runs: the limits phase's job."""


# -- the factories' phases (bench/factories.py) ------------------------------------------------

BACKFILL = "bench.backfill"
PURGE = "bench.purge"
PURGE_QUEUE = "purge"


def _mark(rows: Any) -> None:
    """The plain loop's update on the batch's key range, in one statement: what a sweep that
    sets columns in SQL would write with ``rows="queryset"`` (no row is loaded)."""
    rows.update(handled=F("handled") + 1, done=True)


def _declare() -> None:
    from tests.testapp.models import SweepRow

    backfill(
        BACKFILL,
        queryset=SweepRow.objects.all(),
        handle=_mark,
        batch_size=1000,
        rows="queryset",
        count=SweepRow.objects.filter(done=False),
    )
    purge(
        PURGE,
        [finished_jobs(state, retention=3600) for state in ("completed", "failed", "cancelled")],
        queue=PURGE_QUEUE,
        batch_size=1000,
    )


_declare()
