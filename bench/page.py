"""The results page, ``docs/benchmarks.md``, written from one run's figures."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from bench.figures import PHASES
from bench.scale import LARGE_PROCESSES, SLOTS, scale_table

if TYPE_CHECKING:
    from bench.core import Bench

HOW_TO_READ = """\
## How to read it

Every throughput figure is set beside a pgbench run of the same SQL on the same database, with
no Python in the path. The **lifecycle ceilings** insert, claim (the `job_claim` seek, `for
update skip locked`) and ack (fenced by the claim token, counter included) as three autocommit
statements, one job at a time (a) or 100 at a time (b), from two clients. The **insert-only
ceilings** write the rows `enqueue` and `enqueue_many` write, from one client like the
benchmark's own single session. A ratio is our figure divided by its ceiling: 1.00x would mean
the library adds nothing to the database's own cost. The per-job path (`enqueue`) is set against
ceiling (a), the batched ones (`enqueue_many`, and the drains, where a worker claims as many jobs
as it has free slots and acks in batches) against ceiling (b). Enqueue figures are also set
against their insert-only ceiling: the lifecycle ceilings pay for the claim and the ack too, so
an enqueue figure can pass them.

`enqueue_many`'s insert-only ratio is not taken against the `pgbench` phase's ceilings, which
run for a fixed time at the end of the run on a table that grows to about a million rows.
Before each call the phase empties the table and runs `enqueue_batch.sql` for the call's rows
(1,000 per autocommit statement, `pgbench_insert_paired`), then the same rows committed once as
the call commits them (one transaction of 1,000-row INSERTs, no conflict clause or `returning`,
as `job_enqueue_minted` writes; `pgbench_insert_call`), then the call, into the same emptied
table: the ratio is the median of the pairs' ratios, its spread in the details, beside the
fastest call against the fastest ceiling run (on a loaded host, the runs least disturbed).
Both write rows of the same width into the same table and indexes, with the server's
`synchronous_commit`; the ceilings' ids are random (`gen_random_uuid()`), the call's
time-ordered, and the call writes its rows by one `COPY` (`job_enqueue_copy`), which pgbench
cannot send.

Drain throughput is jobs divided by the time from the first `started_at` to the last
`finished_at`, both written by the database's clock. The wall-clock figure adds the worker's
start-up (Django set-up, connections, the wake's first probe) and its burst exit, which the
"burst worker on an empty queue" row times alone. With `--processes 2` each of the two children
has the given number of slots. Beside each drain: jobs per claim (the rows one claim statement
takes share its `now()`; for the drain under a declared concurrency limit, jobs per start stamp,
since a lease grant and a settle that hands a slot on stamp the runs they start too),
transactions per 1,000 jobs (`pg_stat_database`: claims, acks, heartbeats and registry writes
together), and the worker's CPU per job, as measured and net of
the CPU that one start and exit cost (counted three times with `--processes 2`: the supervisor
and each child set Django up). One more drain runs two processes with the package's default
slots (`WORKER_CONCURRENCY`, 10, as a worker started without `--concurrency` has them), and its
share of the best drain of the same size in the run (any processes and slots, the scale curve's
included) says what a user who never tunes the worker leaves.
The project's sources are byte-compiled before the run, as pip compiles an installed package,
so a worker's start-up does not include compiling them.

Wake latency is `started_at - created_at` of each job: `created_at` is the enqueue statement's
timestamp and `started_at` the claim's, both from the database clock, so no clock skew enters.
The enqueues are spaced so that the worker is idle (backing off) when each one lands.

Idle statements count the committed and rolled-back transactions of the benchmark database in
`pg_stat_database` over a window in which only the idle worker is connected (each autocommit
statement is one transaction). The counter is read from another database, so reading it adds
nothing; PostgreSQL publishes a backend's counts up to about a second late, which blurs the
edges of the window by a transaction or two. With the defaults an idle worker should send one
claim per poll ceiling, one registry write and one rescue sweep per 30 s: 10 a minute with the
wake live (`POLL_CEILING_WAKE_SECONDS`, 10 s), 24 without (`POLL_CEILING_SECONDS`, 3 s).
PostgreSQL also counts a transaction each time an idle backend catches up on cache
invalidations, which a schema change in any database of the server causes (a test suite
creating tables next door is enough). So each window is gauged by an idle session in an empty
control database: its count is the "background" in the details, 0 or 1 on a quiet server; a
window with more is measured again once and the quieter one kept. Each idle session of the
worker that runs statements publishes about as many catch-ups, so with a background above 1 the
worker's count exceeds the expected one by a small multiple of it. No setting turns the wake
off, so the polling-only figures come from `bench/worker.py`, which runs the same worker with
`use_wake=False`.

The `steps` phase drains jobs of one no-op durable step (`bench.steps`, `ctx.step.run`), then
jobs of five, the same number of each: the second drain's extra transactions and worker CPU,
divided by the four extra steps per job it ran, are the cost of one executed step; steps/s is
every step the second drain stored over its span.

The `backfill` phase sweeps a table of 200,000 rows with a backfill (`bench.backfill`: batches
of 1,000, each one durable step that stores its cursor and counts the batch in the ledger, in
one statement) and times its run by the database's clock; then it runs a plain loop of `UPDATE
... WHERE id BETWEEN` over the same rows, in the same batches, from one session on Django's
connection, as a management command sweeping a table does today: the same QuerySet update as
the backfill's `handle` (`filter(id__range=...).update(...)`); then the same UPDATE in SQL on a
bare psycopg connection, which prepares the statement after five runs (Django's connections do
not). Each sweep takes about a second, so the three alternate three times, each
on a freshly filled table, and the medians are compared. The figure to read is the backfill's
rows/s as a share of the loop's on Django's connection: what the cursor, the steps and the
ledger cost over the code they replace; the share of the bare psycopg loop's is given beside
it.

The `purge` phase drains 20,000 no-op jobs on a table that also holds 1,000,000 jobs finished
two hours ago, once alone, then again while a purge of those finished jobs (`bench.purge`,
retention one hour, batches of 1,000) runs in a worker of its own beside the drain: the drain's
throughput with and without the purge, and the purge's rows deleted per second.

RSS is `VmRSS` of the single worker process, idle after start-up and idle again after the
drain; the peak is its `VmHWM`.

The jobs are `tests.noop`, which does nothing: every figure is the library's own overhead and
the database's, never a job body's. PostgreSQL, the workers, pgbench and the benchmark share the
machine's cores, and anything else running there moves the figures; the load average at the
start of each phase is listed above for that reason. Each phase starts after a `CHECKPOINT`
(what the phase before dirtied is written back first) and once the machine's CPUs were busy
under a fifth of one second (at most 30 s of waiting); the 1-minute load average still carries
the phases before it. Compare ratios between runs rather than
absolute numbers across machines.
"""


SCALE_INTRO = f"""\
The same no-op drain as above with {SLOTS} slots per worker process, at 1, 2 and 4 processes on
the usual backlog, and at {LARGE_PROCESSES} processes on a backlog fifty times larger: how the
throughput and the worker CPU per job move as processes and queued rows grow. Each row is also in
the figures table (`scale_p<processes>_n<jobs>`).
"""


def render(bench: Bench, runtime: float, started: dt.datetime) -> str:
    facts = bench.facts
    mode = "quick (about a tenth of the full sizes)" if bench.args.quick else "full"
    machine = [
        f"- CPU: {facts.get('cpu', 'unknown')}, {facts['cores']} cores (`os.cpu_count()`)",
        f"- memory: {facts.get('memory', 'unknown')}",
        f"- load average when the run started: {facts.get('load', 'unknown')}; at the start "
        "of each phase (1 min): "
        + ", ".join(f"{phase} {load}" for phase, load in bench.phase_load.items()),
        f"- OS: {facts['os']}",
        f"- PostgreSQL {facts['postgres']} ({facts['postgres settings']}), on the same machine",
        f"- Python {facts['python']}, Django {facts['django']}, psycopg {facts['psycopg']} "
        f"(libpq {facts['libpq']})",
    ]
    notes = "".join(f"\n- {note}" for note in bench.notes)
    curve = scale_table(bench)
    if curve:
        curve = f"\n\n## Scale curve\n\n{SCALE_INTRO}\n{curve}"
    return f"""\
# Benchmarks

What one run of `bench/run.py` measured: how fast jobs are enqueued and drained, how soon an idle
worker starts a new job, how many statements an idle worker sends, and how much memory a worker
holds, each throughput beside a pgbench ceiling of the same SQL.

## How to run it

Inside the project's virtual environment (`./scripts/test` creates `.venv`), with a PostgreSQL
server reachable and `pgbench` on the `PATH`:

```console
.venv/bin/python bench/run.py          # every phase, {runtime / 60:.0f} min; rewrites this page
.venv/bin/python bench/run.py --quick  # about ten times smaller: a smoke run
.venv/bin/python bench/run.py --phases drain,latency --json results.json
.venv/bin/python bench/run.py --peers  # beside pgqueuer and Procrastinate: rewrites that section
.venv/bin/python bench/run.py --redis-peers  # the Redis driver beside Celery and RQ: its section
```

The run uses a database of its own, `ultimat3_bench` (`ULTIMAT3_BENCH_DATABASE` names another),
on the server of `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`); it
creates it when missing, migrates it with `python -m django migrate --settings bench.settings`, and
empties `x_jobs`, `x_job_steps`, `x_job_counters`, `x_job_workers` and `x_job_leases` before
each phase.
`bench/settings.py` is the test settings pointed at that database, with `CONN_MAX_AGE` 600,
`DEBUG` off, no Redis cache alias and `WORKER_CONCURRENCY` 32; every other `ULTIMAT3_JOBS` key
keeps its default.
Workers run as `python -m django jobs_worker --settings bench.settings ...` subprocesses. The
phases, in order (`--phases` picks some, comma-separated):
{", ".join(f"`{phase}`" for phase in PHASES)}.
Progress goes to stderr; a run of every phase at full size rewrites this page, any other writes
it only with `--output`.

## The run

- date: {started:%Y-%m-%d %H:%M} UTC; mode: {mode}; run time {runtime / 60:.1f} minutes
{chr(10).join(machine)}{notes}

## Figures

{bench.table()}{curve}

{HOW_TO_READ}"""
