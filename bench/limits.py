"""The cost of a concurrency limit: the drain of no-op jobs declared with ``concurrency=64``
beside the same drain of undeclared ones, both by two processes of 32 slots, so the cap is
never what holds a job back and the difference is the lease rows' own cost. The workers run
until every job completed (not ``--burst``: a job shed to a little later would end a burst
worker's run with it still queued).

One drain of each lasts about a second and a half by the database's clock, and one pair's
ratio moved from 0.59 to 0.88 between runs on the same host: the phase runs several PAIRS,
each a free drain and a capped drain on emptied tables, the order alternating between pairs
(so that neither side always runs second, on a warmer or a more loaded host), and the figure
is the median of the pairs' ratios. Beside the rates it counts what a job costs on each side:
the worker's CPU, the database backends' CPU (read from ``/proc`` just before the worker
stops), transactions, the job table's non-HOT updates and the lease rows written (inserted
and deleted by grants and frees, updated by hand-offs: counts, which a shared host's noise does
not move, where the CPU figures move by several µs between pairs)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.figures import Figure, spread
from bench.support import BenchError, children_cpu_seconds, process_cpu_seconds, say

if TYPE_CHECKING:
    from bench.core import Bench

PROCESSES = 2
SLOTS = 32
PAIRS = 7
PAIRS_QUICK = 3


@dataclass(frozen=True)
class Side:
    """One drain of the pair: its rate by the database's clock, CPU µs per job, transactions,
    x_jobs non-HOT updates and x_job_leases rows inserted, updated and deleted per 1,000 jobs."""

    rate: float
    worker_us: float
    backend_us: float
    xacts: float
    non_hot: float
    lease_rows: tuple[float, float, float] = (0.0, 0.0, 0.0)


def phase_limits(bench: Bench) -> None:
    from bench.jobs import capped

    n = bench.scale.drain_jobs
    pairs = PAIRS_QUICK if bench.args.quick else PAIRS
    frees: list[Side] = []
    helds: list[Side] = []
    for index in range(pairs):
        order = ((None, frees), (capped, helds))
        for handle, sides in order if index % 2 == 0 else reversed(order):
            sides.append(drain(bench, n, handle))
        say_pair(index, frees[-1], helds[-1])
    ratios = [held.rate / free.rate for free, held in zip(frees, helds, strict=True)]

    def median(sides: list[Side], field: str) -> float:
        return statistics.median(getattr(side, field) for side in sides)

    bench.add(
        Figure(
            "limits_ratio",
            "drain with concurrency=64 declared, as a share of the same drain without it "
            f"(median of {pairs} alternating pairs)",
            statistics.median(ratios),
            "x",
            detail=(
                f"pair ratios {spread(ratios)}; {median(helds, 'rate'):,.0f} against "
                f"{median(frees, 'rate'):,.0f} jobs/s (database clock, medians); per job, capped "
                f"against free: worker CPU {median(helds, 'worker_us'):,.0f} against "
                f"{median(frees, 'worker_us'):,.0f} µs, PostgreSQL backend CPU "
                f"{median(helds, 'backend_us'):,.0f} against {median(frees, 'backend_us'):,.0f} "
                f"µs; per 1,000 jobs: transactions {median(helds, 'xacts'):,.0f} against "
                f"{median(frees, 'xacts'):,.0f}, x_jobs non-HOT updates "
                f"{median(helds, 'non_hot'):,.0f} against {median(frees, 'non_hot'):,.0f}; "
                f"lease rows inserted / updated / deleted per 1,000 capped jobs "
                f"{' / '.join(f'{n:,.0f}' for n in lease_medians(helds))}"
            ),
        )
    )


def lease_medians(sides: list[Side]) -> list[float]:
    """The medians of the lease rows inserted, updated and deleted per 1,000 jobs."""
    return [statistics.median(side.lease_rows[i] for side in sides) for i in range(3)]


def say_pair(index: int, free: Side, held: Side) -> None:
    say(
        f"  pair {index + 1}: {held.rate / free.rate:.3f} ({held.rate:,.0f} / {free.rate:,.0f} "
        f"jobs/s); worker {held.worker_us:,.0f} / {free.worker_us:,.0f} µs/job, backend "
        f"{held.backend_us:,.0f} / {free.backend_us:,.0f} µs/job, non-HOT "
        f"{held.non_hot:,.0f} / {free.non_hot:,.0f} per 1,000 jobs; lease rows inserted / "
        f"updated / deleted {' / '.join(f'{n:,.0f}' for n in held.lease_rows)} per 1,000 jobs"
    )


def drain(bench: Bench, n: int, handle: Any) -> Side:
    """Drain ``n`` no-op jobs of ``handle`` (the undeclared no-op job when None) by the pair's
    worker, until every one completed, and answer the drain's rate and counts per job."""
    bench.truncate()
    bench.backlog(n, handle)
    non_hot_before = non_hot_updates(bench)
    leases_before = lease_writes(bench)
    bench.disconnect_bench_database()  # only the workers' transactions fall in the window
    xacts_before = bench.xacts()
    cpu_before = children_cpu_seconds()
    options = ["--concurrency", str(SLOTS), "--processes", str(PROCESSES), "--log-level", "WARNING"]
    worker = bench.start_worker(*options, name="limits")
    bench.wait_completed(n, worker, timeout=60 + n / 100, stop=False)
    backend = backends_cpu_seconds(bench)
    bench.workers.remove(worker)
    worker.stop()
    cpu = children_cpu_seconds() - cpu_before
    time.sleep(0.5)  # backends publish their counts as they exit
    xacts = bench.xacts() - xacts_before
    inserted, updated, deleted = (
        after - before for after, before in zip(lease_writes(bench), leases_before, strict=True)
    )
    counts = bench.count_jobs()
    if counts != {"completed": n}:
        raise BenchError(f"the drain of {n} jobs left {counts}")
    return Side(
        rate=n / bench.db_span(),
        worker_us=cpu / n * 1e6,
        backend_us=backend / n * 1e6,
        xacts=xacts / n * 1000,
        non_hot=(non_hot_updates(bench) - non_hot_before) / n * 1000,
        lease_rows=(inserted / n * 1000, updated / n * 1000, deleted / n * 1000),
    )


def backends_cpu_seconds(bench: Bench) -> float:
    """CPU seconds of every client backend on the bench database but the probe's own: the
    workers' connections, all opened after the window began (the server runs on this host)."""
    pids = bench.sql(
        "select pid from pg_stat_activity where datname = current_database() "
        "and backend_type = 'client backend' and pid <> pg_backend_pid()"
    )
    total = 0.0
    for (pid,) in pids:
        try:
            total += process_cpu_seconds(pid)
        except FileNotFoundError:  # a connection closed since: its CPU is lost to the count
            continue
    return total


def non_hot_updates(bench: Bench) -> int:
    rows = bench.sql(
        "select coalesce(sum(n_tup_upd - n_tup_hot_upd), 0) from pg_stat_user_tables "
        "where relname = 'x_jobs'"
    )
    return int(rows[0][0])


def lease_writes(bench: Bench) -> tuple[int, int, int]:
    """x_job_leases rows inserted, updated and deleted so far (the server's counts)."""
    rows = bench.sql(
        "select coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0), "
        "coalesce(sum(n_tup_del), 0) from pg_stat_user_tables where relname = 'x_job_leases'"
    )
    inserted, updated, deleted = rows[0]
    return int(inserted), int(updated), int(deleted)
