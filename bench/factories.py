"""The factories' phases.

``backfill``: a backfill (``bench.backfill``, batches of :data:`BATCH` rows, each step storing
its cursor and count, the ledger advanced per batch) sweeps a table of ``backfill_rows`` rows;
then a plain loop of ``UPDATE ... WHERE id BETWEEN`` over the same table, the same batch size
and the same update, from one session. Each is timed on its own; the figure is the backfill's
rows/s as a share of the plain loop's. The backfill is declared ``rows="queryset"``, as a sweep
that sets columns in SQL would be: its ``handle`` gets the batch's key range as a QuerySet and
sends the plain loop's update on it (``id > cursor and id <= last key``, the same 1,000 rows
as the loop's ``BETWEEN``), so both sides run the same UPDATE on the same rows and batches; the
backfill adds what makes it resumable (the reads of batch boundaries, one per 8 batches, and
the step with the ledger's count, one statement per batch).

``purge``: a drain of ``purge_drain_jobs`` no-op jobs on a table that also holds
``purge_rows`` jobs finished two hours ago, once alone, then again with a purge of those
finished rows (``bench.purge``, retention one hour) running beside it in a worker of its own:
the drain's throughput with and without the purge, and the purge's rows deleted per second.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from bench.support import BenchError, say

if TYPE_CHECKING:
    from bench.run import Bench

BATCH = 1000
SWEEP_TABLE = "testapp_sweeprow"
OLD_NAME = "bench.old"


def _fill_sweep_table(bench: Bench, rows: int) -> None:
    bench.sql(f"truncate {SWEEP_TABLE} restart identity")
    bench.sql(
        f"insert into {SWEEP_TABLE} (handled, done) select 0, false from generate_series(1, %s)",
        [rows],
    )
    bench.sql(f"vacuum (analyze) {SWEEP_TABLE}")


def _plain_loop(bench: Bench, rows: int) -> float:
    """Seconds the plain loop takes: one autocommit ``UPDATE ... WHERE id BETWEEN`` per batch."""
    start = time.perf_counter()
    for low in range(1, rows + 1, BATCH):
        bench.sql(
            f"update {SWEEP_TABLE} set handled = handled + 1, done = true "
            "where id between %s and %s",
            [low, low + BATCH - 1],
        )
    return time.perf_counter() - start


def _backfill_run(bench: Bench, rows: int) -> float:
    """Seconds the backfill's run took by the database's clock (its job's start to finish)."""
    from bench.jobs import BACKFILL
    from ultimat3_jobs.factories.backfill import backfill_declaration

    bench.truncate()
    bench.sql("truncate x_backfills")
    backfill_declaration(BACKFILL).enqueue()
    bench.disconnect_bench_database()
    worker = bench.start_worker(
        "--burst", "--concurrency", "1", "--log-level", "WARNING", name="backfill"
    )
    worker.wait(timeout=120 + rows / 200)
    bench.workers.remove(worker)
    worker.stop()
    found = bench.sql(
        "select state, extract(epoch from finished_at - started_at)::float8 from x_jobs "
        "where name = %s",
        [BACKFILL],
    )
    if not found or found[0][0] != "completed":
        raise BenchError(f"the backfill did not complete: {found}")
    left = bench.sql(f"select count(*) from {SWEEP_TABLE} where handled <> 1")[0][0]
    if left:
        raise BenchError(f"the backfill left {left} row(s) not handled exactly once")
    return float(found[0][1])


def phase_backfill(bench: Bench) -> None:
    from bench.run import Figure

    rows = bench.scale.backfill_rows
    _fill_sweep_table(bench, rows)
    say(f"  backfill of {rows:,} rows, batches of {BATCH}")
    backfill_seconds = _backfill_run(bench, rows)
    _fill_sweep_table(bench, rows)
    say(f"  plain UPDATE ... WHERE id BETWEEN loop over the same {rows:,} rows")
    plain_seconds = _plain_loop(bench, rows)
    backfill_rate, plain_rate = rows / backfill_seconds, rows / plain_seconds
    bench.add(
        Figure(
            "backfill_rate",
            f"backfill of {rows:,} rows, batches of {BATCH}, 1 slot: database clock",
            backfill_rate,
            "rows/s",
            detail='rows="queryset": one key read per 8 batches; per batch the update, then '
            "the step (cursor and count) and the ledger count in one statement, one transaction",
        )
    )
    bench.add(
        Figure(
            "backfill_plain_rate",
            "plain UPDATE ... WHERE id BETWEEN loop, same rows and batches, 1 session",
            plain_rate,
            "rows/s",
        )
    )
    bench.add(
        Figure(
            "backfill_share",
            "backfill rows/s as a share of the plain loop's",
            backfill_rate / plain_rate * 100,
            "%",
        )
    )
    bench.sql(f"truncate {SWEEP_TABLE} restart identity")


def _insert_finished(bench: Bench, rows: int) -> None:
    """``rows`` jobs finished two hours ago (completed, failed, cancelled in turn)."""
    for start in range(0, rows, 100_000):
        bench.sql(
            "insert into x_jobs (id, name, queue, state, input, attempt, max_attempts, run_at, "
            "created_at, started_at, finished_at) "
            "select gen_random_uuid(), %s, 'default', "
            "(array['completed', 'failed', 'cancelled'])[1 + n %% 3], '{}'::jsonb, 1, 3, "
            "now() - interval '2 hours', now() - interval '2 hours', "
            "now() - interval '2 hours', now() - interval '2 hours' "
            "from generate_series(1, %s) as n",
            [OLD_NAME, min(100_000, rows - start)],
        )


def _drain_beside(
    bench: Bench, jobs: int, finished: int, *, with_purge: bool
) -> tuple[float, float]:
    """Drain ``jobs`` no-op jobs with ``finished`` old finished rows in the table, with or
    without the purge running beside it; answers the drain's jobs/s (database clock) and the
    purge's rows deleted/s (0 without it)."""
    from bench.jobs import PURGE, PURGE_QUEUE
    from ultimat3_jobs.model.registry import registry

    bench.truncate()
    _insert_finished(bench, finished)
    bench.backlog(jobs)
    if with_purge:
        registry.get(PURGE).enqueue()
    bench.disconnect_bench_database()
    options = ("--burst", "--concurrency", "32", "--log-level", "WARNING")
    drainer = bench.start_worker(*options, name="purge-drain")
    purger = None
    if with_purge:
        purger = bench.start_worker(
            "--burst", "--queues", PURGE_QUEUE, "--log-level", "WARNING", name="purge"
        )
    for worker in (drainer, purger):
        if worker is not None:
            worker.wait(timeout=300 + jobs / 100 + finished / 1000)
            bench.workers.remove(worker)
            worker.stop()
    drained = bench.sql(
        "select count(*), extract(epoch from max(finished_at) - min(started_at))::float8 "
        "from x_jobs where name not in (%s, %s) and state = 'completed'",
        [OLD_NAME, PURGE],
    )
    if int(drained[0][0]) != jobs:
        raise BenchError(f"the drain completed {drained[0][0]} of {jobs} jobs")
    left = int(bench.sql("select count(*) from x_jobs where name = %s", [OLD_NAME])[0][0])
    purge_rate = 0.0
    if with_purge:
        found = bench.sql(
            "select state, extract(epoch from finished_at - started_at)::float8 from x_jobs "
            "where name = %s",
            [PURGE],
        )
        if not found or found[0][0] != "completed" or left:
            raise BenchError(f"the purge did not complete ({found}); {left} old rows left")
        purge_rate = finished / float(found[0][1])
    return jobs / float(drained[0][1]), purge_rate


def phase_purge(bench: Bench) -> None:
    from bench.run import Figure

    jobs, finished = bench.scale.purge_drain_jobs, bench.scale.purge_rows
    say(f"  drain of {jobs:,} jobs beside {finished:,} old finished jobs, without a purge")
    alone, _ = _drain_beside(bench, jobs, finished, with_purge=False)
    say("  the same drain with the purge of those finished jobs beside it")
    beside, purge_rate = _drain_beside(bench, jobs, finished, with_purge=True)
    bench.add(
        Figure(
            "purge_drain_alone",
            f"drain of {jobs:,} no-op jobs, {finished:,} old finished jobs in the table, "
            "no purge: database clock",
            alone,
            "jobs/s",
        )
    )
    bench.add(
        Figure(
            "purge_drain_beside",
            "the same drain with a purge of the old finished jobs running beside it",
            beside,
            "jobs/s",
            detail=f"{beside / alone * 100:.0f} % of the drain alone",
        )
    )
    bench.add(
        Figure(
            "purge_rate",
            f"the purge beside the drain: {finished:,} finished jobs deleted, batches of "
            f"{BATCH}: database clock",
            purge_rate,
            "rows/s",
        )
    )
