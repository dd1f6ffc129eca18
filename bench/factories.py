"""The factories' phases.

``backfill``: a backfill (``bench.backfill``, batches of :data:`BATCH` rows, each step storing
its cursor and count, the ledger advanced per batch) sweeps a table of ``backfill_rows`` rows;
then a plain loop over the same table and batches, from one session on Django's connection, as
a management command does today: per batch the same QuerySet update as the backfill's
``handle`` on ``id__range`` (``UPDATE ... WHERE id BETWEEN``); then the same UPDATE in SQL on a
bare psycopg connection (prepared after five runs). The three alternate, ``ROUNDS`` times each;
the figure is the backfill's rows/s as a share of the loop's on Django's connection, the bare
psycopg loop's share beside it. The backfill is declared ``rows="queryset"``, as a sweep that
sets columns in SQL would be: its ``handle`` gets the batch's key range as a QuerySet and sends
the update on it (``id > cursor and id <= last key``, the same 1,000 rows as the loop's
``BETWEEN``), so both sides run the same UPDATE on the same rows and batches; the backfill adds
what makes it resumable (the reads of batch boundaries, one per 8 batches, and the step with
the ledger's count, one statement per batch).

``purge``: a drain of ``purge_drain_jobs`` no-op jobs on a table that also holds
``purge_rows`` jobs finished two hours ago, once alone, then again with a purge of those
finished rows (``bench.purge``, retention one hour) running beside it in a worker of its own:
the drain's throughput with and without the purge, and the purge's rows deleted per second.
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING

from bench.support import BenchError, say

if TYPE_CHECKING:
    from bench.run import Bench

BATCH = 1000
ROUNDS = 3
SWEEP_TABLE = "testapp_sweeprow"
OLD_NAME = "bench.old"


def _fill_sweep_table(bench: Bench, rows: int) -> None:
    bench.sql(f"truncate {SWEEP_TABLE} restart identity")
    bench.sql(
        f"insert into {SWEEP_TABLE} (handled, done) select 0, false from generate_series(1, %s)",
        [rows],
    )
    bench.sql(f"vacuum (analyze) {SWEEP_TABLE}")


PLAIN_UPDATE = (
    f"update {SWEEP_TABLE} set handled = handled + 1, done = true where id between %s and %s"
)


def _plain_loop(bench: Bench, rows: int) -> float:
    """Seconds the plain loop takes on Django's connection, as a management command would run
    it: per batch, the same QuerySet update as the backfill's ``handle`` (``bench.jobs``), on
    ``id__range`` (SQL's ``BETWEEN``), in autocommit."""
    from django.db import connection
    from django.db.models import F

    from tests.testapp.models import SweepRow

    start = time.perf_counter()
    for low in range(1, rows + 1, BATCH):
        SweepRow.objects.filter(id__range=(low, low + BATCH - 1)).update(
            handled=F("handled") + 1, done=True
        )
    seconds = time.perf_counter() - start
    connection.close()
    return seconds


def _psycopg_loop(bench: Bench, rows: int) -> float:
    """Seconds the same loop takes on a bare psycopg connection, which prepares the statement
    after its fifth run (Django's connections never do, unless the alias asks)."""
    start = time.perf_counter()
    for low in range(1, rows + 1, BATCH):
        bench.sql(PLAIN_UPDATE, [low, low + BATCH - 1])
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
    runs: dict[str, list[float]] = {"backfill": [], "django": [], "psycopg": []}
    sweeps = {
        "backfill": _backfill_run,
        "django": _plain_loop,
        "psycopg": _psycopg_loop,
    }
    # Alternated, ROUNDS times each: one sweep takes about a second, short enough that one
    # burst of other work on the machine would decide a single pair.
    for round_ in range(1, ROUNDS + 1):
        for what, sweep in sweeps.items():
            _fill_sweep_table(bench, rows)
            say(f"  round {round_}: {what} sweep of {rows:,} rows, batches of {BATCH}")
            runs[what].append(sweep(bench, rows))
    rate = {what: rows / statistics.median(seconds) for what, seconds in runs.items()}
    spread = {what: ", ".join(f"{rows / s:,.0f}" for s in runs[what]) for what in runs}
    bench.add(
        Figure(
            "backfill_rate",
            f"backfill of {rows:,} rows, batches of {BATCH}, 1 slot: database clock",
            rate["backfill"],
            "rows/s",
            detail='rows="queryset": one key read per 8 batches; per batch the update, then '
            "the step (cursor and count) and the ledger count in one statement, one "
            f"transaction; rounds: {spread['backfill']}",
        )
    )
    bench.add(
        Figure(
            "backfill_plain_rate",
            "plain UPDATE ... WHERE id BETWEEN loop on Django's connection, same rows and "
            "batches, 1 session",
            rate["django"],
            "rows/s",
            detail=f"rounds: {spread['django']}",
        )
    )
    bench.add(
        Figure(
            "backfill_share",
            "backfill rows/s as a share of the plain loop's on Django's connection",
            rate["backfill"] / rate["django"] * 100,
            "%",
            detail=f"medians of {ROUNDS} alternated rounds",
        )
    )
    bench.add(
        Figure(
            "backfill_psycopg_rate",
            "the same loop on a bare psycopg connection (prepared after 5 runs)",
            rate["psycopg"],
            "rows/s",
            detail=f"rounds: {spread['psycopg']}",
        )
    )
    bench.add(
        Figure(
            "backfill_share_psycopg",
            "backfill rows/s as a share of the bare psycopg loop's",
            rate["backfill"] / rate["psycopg"] * 100,
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
