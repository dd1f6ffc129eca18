"""The cost of a concurrency limit: the drain of no-op jobs declared with ``concurrency=64``
beside the same drain of undeclared ones, both by two processes of 32 slots, so the cap is
never what holds a job back and the difference is the lease rows' own cost. The workers run
until every job completed (not ``--burst``: a job shed to a little later would end a burst
worker's run with it still queued)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.run import Bench

PROCESSES = 2
SLOTS = 32


def phase_limits(bench: Bench) -> None:
    from bench.jobs import capped
    from bench.run import Figure

    n = bench.scale.drain_jobs
    free = bench.drain_once(n, PROCESSES, SLOTS, key="limits_free", burst=False)
    held = bench.drain_once(
        n,
        PROCESSES,
        SLOTS,
        key="limits_capped",
        handle=capped,
        jobs="no-op jobs declared with concurrency=64",
        burst=False,
    )
    free_rate, held_rate = free.jobs / free.span, held.jobs / held.span
    bench.add(
        Figure(
            "limits_ratio",
            "drain with concurrency=64 declared, as a share of the same drain without it",
            held_rate / free_rate,
            "x",
            detail=(
                f"{held_rate:,.0f} against {free_rate:,.0f} jobs/s (database clock); worker CPU "
                f"{held.cpu / n * 1e6:,.0f} against {free.cpu / n * 1e6:,.0f} µs/job"
            ),
        )
    )
