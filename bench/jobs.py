"""The benchmark's own jobs: ``bench.stamp`` tells the side-by-side run when its body started;
``bench.steps`` and ``bench.capped`` are the steps and limits phases' jobs."""

from __future__ import annotations

import time
from typing import Any

from bench.peers.common import send_stamp
from ultimat3_jobs import job


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
