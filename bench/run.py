#!/usr/bin/env python
"""The ultimat3-jobs benchmark: enqueue and drain throughput, wake latency, idle load and worker
memory on PostgreSQL, each figure set beside a pgbench ceiling of the same SQL.

    .venv/bin/python bench/run.py                 # every phase; rewrites docs/benchmarks.md
    .venv/bin/python bench/run.py --quick         # about ten times smaller, for a smoke run
    .venv/bin/python bench/run.py --phases drain,latency
    .venv/bin/python bench/run.py --peers         # beside pgqueuer and Procrastinate (bench/peers)
    .venv/bin/python bench/run.py --redis-peers   # the Redis driver beside Celery and RQ

It uses a database of its own (``ULTIMAT3_BENCH_DATABASE``, default ``ultimat3_bench``) on the
server of ``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/postgres``), creates it
when missing, migrates it, and empties the job tables before each phase. Progress goes to stderr;
the table of figures to stdout. Workers run as ``python -m django jobs_worker --settings
bench.settings ...`` subprocesses; every one is ended when the run ends, however it ends.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from bench.factories import phase_backfill, phase_purge
from bench.limits import phase_limits
from bench.peers.driver import run_side_by_side
from bench.peers.redis_run import END as REDIS_END
from bench.peers.redis_run import START as REDIS_START
from bench.peers.redis_run import run_redis_side_by_side
from bench.peers.report import keep_section
from bench.scale import LARGE_PROCESSES, SLOTS, phase_scale, scale_table
from bench.steps import phase_steps
from bench.support import (
    ROOT,
    SETTINGS,
    STARTED,
    BenchError,
    WorkerProcess,
    children_cpu_seconds,
    cpu_busy_seconds,
    guarded,
    kib_to_mib,
    load_average,
    machine_facts,
    percentile,
    proc_status,
    process_cpu_seconds,
    say,
    subprocess_env,
    wait_until_idle,
)

PGBENCH_DIR = Path(__file__).resolve().parent / "pgbench"
DOCS_PAGE = ROOT / "docs" / "benchmarks.md"
PHASES = (
    "enqueue_many",
    "enqueue",
    "drain",
    "scale",
    "steps",
    "limits",
    "backfill",
    "purge",
    "latency",
    "idle",
    "rss",
    "pgbench",
)
JOB_TABLES = ("x_jobs", "x_job_steps", "x_job_counters", "x_job_workers", "x_job_leases")
WAKE_LIVE = "jobs.wake.live"
WORKER_STARTED = "jobs.worker.started"
QUIET_BACKGROUND = 1
BACKLOG_CHUNK = 100_000
"""Jobs per ``enqueue_many`` call when a backlog is laid down (bounds the benchmark's memory)."""
"""Catch-up transactions of the control session up to which a window counts as quiet."""


@dataclass(frozen=True)
class Scale:
    """How much each phase does; ``--quick`` divides it by about ten."""

    enqueue_many_jobs: int = 20_000
    enqueue_calls: int = 3_000
    repeats: int = 3
    drain_jobs: int = 20_000
    drain_processes: tuple[int, ...] = (1, 2)
    drain_concurrency: tuple[int, ...] = (16, 64)
    latency_samples: int = 200
    latency_gap: tuple[float, float] = (0.2, 0.5)
    idle_warmup: float = 15.0
    idle_window: float = 60.0
    idle_attempts: int = 2
    rss_jobs: int = 100_000
    pgbench_seconds: int = 15
    scale_backlog: int = 20_000
    scale_large_backlog: int = 1_000_000
    steps_jobs: int = 4_000
    backfill_rows: int = 200_000
    purge_rows: int = 1_000_000
    purge_drain_jobs: int = 20_000


FULL = Scale()
QUICK = replace(
    FULL,
    enqueue_many_jobs=2_000,
    enqueue_calls=300,
    repeats=2,
    drain_jobs=2_000,
    latency_samples=20,
    idle_warmup=13.0,
    idle_window=6.0,
    idle_attempts=1,
    rss_jobs=10_000,
    pgbench_seconds=3,
    scale_backlog=2_000,
    scale_large_backlog=100_000,
    steps_jobs=400,
    backfill_rows=20_000,
    purge_rows=100_000,
    purge_drain_jobs=2_000,
)


@dataclass(frozen=True)
class Drained:
    """What one drain measured: jobs, seconds by the database's clock, worker CPU seconds and
    the database's transactions."""

    jobs: int
    span: float
    cpu: float
    xacts: int


@dataclass
class Figure:
    """One measured figure; ``ceiling`` and ``insert_ceiling`` name the pgbench figures it is
    compared with."""

    key: str
    label: str
    value: float
    unit: str
    ceiling: str | None = None
    insert_ceiling: str | None = None
    detail: str = ""
    ratio: float | None = None
    insert_ratio: float | None = None


# -- the benchmark ------------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.scale = QUICK if args.quick else FULL
        self.phases: list[str] = args.phases
        self.figures: dict[str, Figure] = {}
        self.notes: list[str] = []
        self.facts: dict[str, str] = {}
        self.workers: list[WorkerProcess] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="ultimat3-bench-"))
        self.rng = random.Random(20_240_601)
        self._conn: psycopg.Connection[Any] | None = None
        self._admin: psycopg.Connection[Any] | None = None
        self.startup_cpu = 0.0
        self.phase_load: dict[str, str] = {}

        from bench import settings as bench_settings

        self.database: dict[str, Any] = dict(bench_settings.DATABASES["default"])
        self.dbname: str = self.database["NAME"]
        from example_project.dburl import database_from_url
        from tests.settings import DEFAULT_DATABASE_URL

        server = database_from_url(os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL)
        self.admin_dbname = server["NAME"] if server["NAME"] != self.dbname else "postgres"
        # An empty database beside the bench one, where an idle session gauges the background.
        self.control_dbname = f"{self.dbname}_control"

    # -- connections ----------------------------------------------------------------------------

    def conninfo(self, dbname: str, *, password: bool = True) -> str:
        db = self.database
        params = {
            "host": db.get("HOST") or None,
            "port": db.get("PORT") or None,
            "user": db.get("USER") or None,
            "password": (db.get("PASSWORD") or None) if password else None,
            "dbname": dbname,
            **db.get("OPTIONS", {}),
        }
        return make_conninfo(**{key: value for key, value in params.items() if value is not None})

    def admin(self) -> psycopg.Connection[Any]:
        """A connection to another database of the server: reading statistics there adds no
        transaction to the bench database's."""
        if self._admin is None or self._admin.closed:
            self._admin = psycopg.connect(
                self.conninfo(self.admin_dbname), autocommit=True, application_name="bench-admin"
            )
        return self._admin

    def sql(self, query: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run one statement on the bench database (autocommit) and answer its rows."""
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(
                self.conninfo(self.dbname), autocommit=True, application_name="bench-probe"
            )
        with self._conn.cursor() as cursor:
            cursor.execute(query, params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def disconnect_bench_database(self) -> None:
        """Close every connection this process holds to the bench database, and wait until
        their backends are gone: a backend publishes its transaction counts as it exits, and
        they must not land in a window that counts the workers'."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        from django.db import connections

        connections.close_all()
        deadline = time.monotonic() + 10
        while others := self.sessions():
            if time.monotonic() > deadline:
                raise BenchError(f"sessions still connected to {self.dbname}: {others}")
            time.sleep(0.05)
        time.sleep(0.2)

    # -- setup ----------------------------------------------------------------------------------

    def prepare(self) -> None:
        with psycopg.connect(self.conninfo(self.admin_dbname), autocommit=True) as conn:
            for name in (self.dbname, self.control_dbname):
                exists = conn.execute(
                    "select 1 from pg_database where datname = %s", (name,)
                ).fetchone()
                if not exists:
                    say(f"creating database {name}")
                    conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        say(f"migrating {self.dbname}")
        subprocess.run(
            [sys.executable, "-m", "django", "migrate", "--settings", SETTINGS, "-v", "0"],
            cwd=ROOT,
            env=subprocess_env(),
            check=True,
            timeout=300,
        )
        os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS
        import django

        django.setup()
        deadline = time.monotonic() + 10
        while others := self.sessions():
            if time.monotonic() > deadline:
                raise BenchError(
                    f"other sessions are connected to {self.dbname} ({others}); a worker of an "
                    "earlier run? The figures need the database to themselves."
                )
            time.sleep(0.2)
        self.facts = machine_facts()
        if {"drain", "latency", "idle", "rss"} & set(self.phases):
            self.preflight()
        settings = dict(
            self.sql(
                "select name, setting || coalesce(' ' || unit, '') from pg_settings where name in "
                "('server_version', 'shared_buffers', 'synchronous_commit', 'fsync', "
                "'autovacuum', 'max_connections')"
            )
        )
        self.facts["postgres"] = settings.pop("server_version")
        self.facts["postgres settings"] = ", ".join(f"{k}={v}" for k, v in sorted(settings.items()))
        say("machine: " + "; ".join(f"{k} {v}" for k, v in self.facts.items()))

    def preflight(self) -> None:
        """One burst worker on an empty queue: a worker that cannot start fails here, at once,
        not in the middle of a phase. Its CPU time is what a start and an exit cost, taken off
        the drains' CPU per job."""
        self.truncate()
        cpu_before = children_cpu_seconds()
        start = time.perf_counter()
        worker = self.start_worker("--burst", "--log-level", "WARNING", name="preflight")
        worker.wait(timeout=60)
        wall = time.perf_counter() - start
        self.startup_cpu = children_cpu_seconds() - cpu_before
        self.workers.remove(worker)
        worker.stop()
        self.add(
            Figure(
                "startup",
                "burst worker on an empty queue, process start to exit",
                wall,
                "s",
                detail=f"{self.startup_cpu:.2f} s of CPU",
            )
        )

    def truncate(self) -> None:
        self.sql(f"truncate {', '.join(JOB_TABLES)}")

    def noop(self) -> Any:
        from tests.testapp.jobs import noop

        return noop

    def count_jobs(self) -> dict[str, int]:
        return {
            state: int(n) for state, n in self.sql("select state, count(*) from x_jobs group by 1")
        }

    def backlog(self, n: int, handle: Any = None, payload: dict[str, Any] | None = None) -> None:
        """``n`` queued jobs of ``handle`` (the no-op job by default) with input ``payload``,
        enqueued in batches, with fresh planner statistics (the server may run without
        autovacuum)."""
        handle = handle or self.noop()
        for start in range(0, n, BACKLOG_CHUNK):
            handle.enqueue_many([dict(payload or {}) for _ in range(min(BACKLOG_CHUNK, n - start))])
        self.sql("analyze x_jobs")

    def start_worker(self, *options: str, wake: bool = True, name: str = "worker") -> WorkerProcess:
        if wake:
            argv = [sys.executable, "-m", "django", "jobs_worker", "--settings", SETTINGS, *options]
        else:
            argv = [sys.executable, "-m", "bench.worker", "--settings", SETTINGS, *options]
        log = self.tmp / f"{name}-{len(self.workers)}.log"
        worker = WorkerProcess(argv, log)
        self.workers.append(worker)
        return worker

    def stop_workers(self) -> None:
        while self.workers:
            self.workers.pop().stop()

    def close(self) -> None:
        self.stop_workers()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def add(self, figure: Figure) -> None:
        self.figures[figure.key] = figure
        say(f"  {figure.label}: {fmt(figure.value)} {figure.unit}  {figure.detail}")

    # -- phases ---------------------------------------------------------------------------------

    def run(self) -> None:
        self.prepare()
        steps: dict[str, Callable[[], None]] = {
            "enqueue_many": self.phase_enqueue_many,
            "enqueue": self.phase_enqueue,
            "drain": self.phase_drain,
            "scale": lambda: phase_scale(self),
            "steps": lambda: phase_steps(self),
            "limits": lambda: phase_limits(self),
            "backfill": lambda: phase_backfill(self),
            "purge": lambda: phase_purge(self),
            "latency": self.phase_latency,
            "idle": self.phase_idle,
            "rss": self.phase_rss,
            "pgbench": self.phase_pgbench,
        }
        for phase in PHASES:
            if phase in self.phases:
                self.sql("checkpoint")  # what the last phase dirtied is written back now
                wait_until_idle()
                self.phase_load[phase] = load_average()
                say(f"phase {phase} (load average {self.phase_load[phase]})")
                steps[phase]()
                self.stop_workers()
        self.truncate()
        self.compare()

    def warm_up(self) -> None:
        """Open the connection and import the enqueue path before anything is timed."""
        self.truncate()
        self.noop().enqueue()
        self.noop().enqueue_many([{}, {}])
        self.truncate()

    def phase_enqueue_many(self) -> None:
        n, repeats = self.scale.enqueue_many_jobs, self.scale.repeats
        self.warm_up()
        rates = []
        for _ in range(repeats):
            self.truncate()
            inputs = [{} for _ in range(n)]
            start = time.perf_counter()
            results = self.noop().enqueue_many(inputs)
            elapsed = time.perf_counter() - start
            if len(results) != n or self.count_jobs() != {"queued": n}:
                raise BenchError(f"enqueue_many of {n} left {self.count_jobs()}")
            rates.append(n / elapsed)
        self.add(
            Figure(
                "enqueue_many",
                f"`enqueue_many`, {n:,} no-op jobs in one call",
                statistics.median(rates),
                "jobs/s",
                ceiling="pgbench_batch",
                insert_ceiling="pgbench_insert_batch",
                detail=f"median of {repeats} runs ({spread(rates)}); one session",
            )
        )

    def phase_enqueue(self) -> None:
        n, repeats = self.scale.enqueue_calls, self.scale.repeats
        self.warm_up()
        noop = self.noop()
        rates = []
        for _ in range(repeats):
            self.truncate()
            start = time.perf_counter()
            for _ in range(n):
                noop.enqueue()
            elapsed = time.perf_counter() - start
            if self.count_jobs() != {"queued": n}:
                raise BenchError(f"{n} enqueues left {self.count_jobs()}")
            rates.append(n / elapsed)
        self.add(
            Figure(
                "enqueue",
                f"`enqueue`, {n:,} calls in a loop, autocommit",
                statistics.median(rates),
                "jobs/s",
                ceiling="pgbench_one",
                insert_ceiling="pgbench_insert_one",
                detail=f"median of {repeats} runs ({spread(rates)}); one session",
            )
        )

    def phase_drain(self) -> None:
        n = self.scale.drain_jobs
        for processes in self.scale.drain_processes:
            for concurrency in self.scale.drain_concurrency:
                self.drain_once(n, processes, concurrency)

    def drain_once(
        self,
        n: int,
        processes: int,
        concurrency: int,
        key: str = "",
        handle: Any = None,
        payload: dict[str, Any] | None = None,
        jobs: str = "no-op jobs",
        burst: bool = True,
    ) -> Drained:
        """Drain ``n`` jobs; ``burst=False`` keeps the worker up until every job completed (jobs
        shed to a later time would end a burst worker's run early) and then stops it."""
        self.truncate()
        self.backlog(n, handle, payload)
        options = ["--concurrency", str(concurrency), "--log-level", "WARNING"]
        if burst:
            options.insert(0, "--burst")
        if processes > 1:
            options += ["--processes", str(processes)]
        # Closed, so that only the workers' transactions fall between the two readings.
        self.disconnect_bench_database()
        xacts_before = self.xacts()
        cpu_before = children_cpu_seconds()
        busy_before, total_before = cpu_busy_seconds()
        start = time.perf_counter()
        worker = self.start_worker(*options, name=f"drain-p{processes}-c{concurrency}")
        if burst:
            worker.wait(timeout=60 + n / 100)
        else:
            self.wait_completed(n, worker, timeout=60 + n / 100)
        wall = time.perf_counter() - start
        busy_after, total_after = cpu_busy_seconds()
        cpu = children_cpu_seconds() - cpu_before
        self.workers.remove(worker)
        worker.stop()
        time.sleep(0.5)  # backends publish their counts as they exit
        xacts = self.xacts() - xacts_before
        counts = self.count_jobs()
        if counts != {"completed": n}:
            raise BenchError(f"the drain of {n} jobs left {counts}")
        span, claims = self.db_span(), self.claims()
        cores = os.cpu_count() or 1
        busy = (busy_after - busy_before) / max(total_after - total_before, 1e-9) * cores
        # A supervisor and each of its children start Django once.
        starts = 1 if processes == 1 else processes + 1
        net_cpu = max(cpu - starts * self.startup_cpu, 0.0)
        slots = f"{processes} x {concurrency}" if processes > 1 else f"{concurrency}"
        what = "process" if processes == 1 else "processes"
        key = key or f"drain_p{processes}_c{concurrency}"
        detail = (
            f"over {span:.2f} s; {n / claims:.1f} jobs per claim; {xacts / n * 1000:,.0f} "
            f"transactions per 1,000 jobs; worker CPU {cpu / n * 1e6:,.0f} µs/job, "
            f"{net_cpu / n * 1e6:,.0f} net of start-up; machine busy {busy:.2f} of {cores} cores"
        )
        self.add(
            Figure(
                key,
                f"drain of {n:,} {jobs}, {processes} {what}, slots {slots}: database clock",
                n / span,
                "jobs/s",
                ceiling="pgbench_batch",
                detail=detail,
            )
        )
        self.add(
            Figure(
                key + "_wall",
                f"same drain, wall clock including process start and exit ({wall:.2f} s)",
                n / wall,
                "jobs/s",
                ceiling="pgbench_batch",
            )
        )
        return Drained(jobs=n, span=span, cpu=cpu, xacts=xacts)

    def wait_completed(self, n: int, worker: WorkerProcess, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.count_jobs().get("completed", 0) < n:
            if worker.popen.poll() is not None:
                raise BenchError(f"the worker exited {worker.popen.returncode}")
            if time.monotonic() > deadline:
                raise BenchError(f"the drain of {n} jobs did not end in {timeout:.0f} s")
            time.sleep(0.05)
        worker.stop()

    def db_span(self) -> float:
        """Seconds from the first claim to the last settle, both stamped by the database."""
        rows = self.sql(
            "select extract(epoch from max(finished_at) - min(started_at))::float8 from x_jobs"
        )
        return float(rows[0][0])

    def worker_slots(self) -> int:
        from ultimat3_jobs.conf import get_settings

        return get_settings().worker_concurrency

    def claims(self) -> int:
        """Claim statements that took jobs: the rows one claim takes share its ``now()``."""
        return int(self.sql("select count(distinct started_at) from x_jobs")[0][0])

    def phase_latency(self) -> None:
        for wake in (True, False):
            self.latency_once(wake)

    def latency_once(self, wake: bool) -> None:
        samples = self.scale.latency_samples
        low, high = self.scale.latency_gap
        self.truncate()
        worker = self.start_worker("--log-level", "INFO", wake=wake, name="latency")
        worker.wait_for_log(WAKE_LIVE if wake else WORKER_STARTED, timeout=30)
        time.sleep(1.0)
        noop = self.noop()
        for _ in range(samples):
            noop.enqueue()
            time.sleep(self.rng.uniform(low, high))
        deadline = time.monotonic() + 30
        while self.sql("select count(*) from x_jobs where started_at is null")[0][0]:
            if time.monotonic() > deadline:
                raise BenchError("enqueued jobs did not start within 30 s")
            time.sleep(0.1)
        rows = self.sql(
            "select extract(epoch from started_at - created_at)::float8 * 1000 from x_jobs"
        )
        latencies = [float(row[0]) for row in rows]
        self.workers.remove(worker)
        worker.stop()
        if len(latencies) != samples:
            raise BenchError(f"{samples} latency samples left {len(latencies)} rows")
        mode = "wake live" if wake else "wake off, polling only"
        key = "latency" if wake else "latency_poll"
        gap = f"one enqueue every {low:g}-{high:g} s"
        for name, value in (
            ("p50", statistics.median(latencies)),
            ("p95", percentile(latencies, 95)),
            ("max", max(latencies)),
        ):
            self.add(
                Figure(
                    f"{key}_{name}",
                    f"enqueue → start, idle worker, {mode}: {name}",
                    value,
                    "ms",
                    detail=f"{samples} samples, {gap}" if name == "p50" else "",
                )
            )

    def phase_idle(self) -> None:
        for wake in (True, False):
            self.idle_once(wake)

    def idle_once(self, wake: bool) -> None:
        warmup, window = self.scale.idle_warmup, self.scale.idle_window
        self.truncate()
        autovacuum_before = self.autovacuum_runs()
        self.disconnect_bench_database()
        worker = self.start_worker("--log-level", "INFO", wake=wake, name="idle")
        worker.wait_for_log(WAKE_LIVE if wake else WORKER_STARTED, timeout=30)
        say(f"  idle worker up; {warmup:g} s to reach its poll ceiling, then {window:g} s counted")
        time.sleep(warmup)
        best: tuple[int, int, float, str] | None = None
        for attempt in range(1, self.scale.idle_attempts + 1):
            counted, noise, elapsed, sessions = self.idle_window(window)
            say(f"  window {attempt}: {counted} transactions; background {noise}")
            if best is None or noise < best[1]:
                best = (counted, noise, elapsed, sessions)
            if noise <= QUIET_BACKGROUND:
                break
        assert best is not None
        counted, noise, elapsed, sessions = best
        if worker.popen.poll() is not None:
            raise BenchError(f"the idle worker exited:\n{worker.log_tail()}")
        self.workers.remove(worker)
        worker.stop()
        autovacuum_runs = self.autovacuum_runs() - autovacuum_before
        detail = (
            f"{counted} transactions in {elapsed:.1f} s; connected: {sessions}; background "
            f"{noise} (an idle session's catch-up transactions in another database)"
        )
        if autovacuum_runs:
            detail += f"; {autovacuum_runs} autovacuum/analyze run(s) fell in the window"
        mode = "wake live (default)" if wake else "wake off, polling only"
        self.add(
            Figure(
                "idle" if wake else "idle_poll",
                f"statements per minute of one idle worker, {mode}",
                counted * 60 / elapsed,
                "/min",
                detail=detail,
            )
        )

    def idle_window(self, window: float) -> tuple[int, int, float, str]:
        """Count the bench database's transactions over ``window`` seconds, and beside them
        the catch-up transactions an idle session without statements runs in the control
        database meanwhile: PostgreSQL makes idle backends catch up on cache invalidations
        whenever any database of the server changes its schema, and counts each catch-up as a
        transaction. A quiet server shows 0; the worker's idle backends see the same."""
        control = psycopg.connect(
            self.conninfo(self.control_dbname), autocommit=True, application_name="bench-control"
        )
        try:
            control.execute("select 1")  # publishes its start-up transaction now
            time.sleep(1.5)
            control_before = self.xacts(self.control_dbname)
            before, start = self.xacts(), time.perf_counter()
            time.sleep(window / 2)
            sessions = self.sessions()
            time.sleep(window / 2)
            after, elapsed = self.xacts(), time.perf_counter() - start
        finally:
            control.close()  # an idle backend publishes its counts only as it exits
        deadline = time.monotonic() + 10
        while self.sessions(self.control_dbname) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        return after - before, self.xacts(self.control_dbname) - control_before, elapsed, sessions

    def sessions(self, dbname: str | None = None) -> str:
        """Who is connected to the bench database, by application name or backend type."""
        rows = (
            self.admin()
            .execute(
                "select coalesce(nullif(application_name, ''), backend_type), count(*) "
                "from pg_stat_activity where datname = %s group by 1 order by 1",
                (dbname or self.dbname,),
            )
            .fetchall()
        )
        return ", ".join(f"{count} x {name}" for name, count in rows)

    def xacts(self, dbname: str | None = None) -> int:
        """Committed plus rolled-back transactions of the bench database, read from another
        database so the reading is not counted."""
        row = (
            self.admin()
            .execute(
                "select xact_commit + xact_rollback from pg_stat_database where datname = %s",
                (dbname or self.dbname,),
            )
            .fetchone()
        )
        assert row is not None
        return int(row[0])

    def autovacuum_runs(self) -> int:
        """Autovacuum and autoanalyze runs on the bench database's tables so far."""
        rows = self.sql(
            "select coalesce(sum(autovacuum_count + autoanalyze_count), 0) from pg_stat_user_tables"
        )
        return int(rows[0][0])

    def phase_rss(self) -> None:
        n = self.scale.rss_jobs
        self.truncate()
        worker = self.start_worker("--log-level", "INFO", name="rss")
        worker.wait_for_log(WAKE_LIVE, timeout=30)
        time.sleep(3.0)
        idle = proc_status(worker.pid)
        say(f"  idle after start: VmRSS {idle['VmRSS']}, {idle['Threads']} threads")
        cpu_before = process_cpu_seconds(worker.pid)
        self.noop().enqueue_many([{} for _ in range(n)])
        deadline = time.monotonic() + 120 + n / 100
        while True:
            counts = self.count_jobs()
            if counts.get("completed", 0) == n:
                break
            if worker.popen.poll() is not None:
                raise BenchError(f"the worker exited during the drain:\n{worker.log_tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"the drain of {n} jobs did not end in time: {counts}")
            time.sleep(0.5)
        cpu = process_cpu_seconds(worker.pid) - cpu_before
        span = self.db_span()
        time.sleep(3.0)
        after = proc_status(worker.pid)
        self.workers.remove(worker)
        worker.stop()
        before_mb, after_mb = kib_to_mib(idle["VmRSS"]), kib_to_mib(after["VmRSS"])
        self.add(
            Figure(
                "rss_idle",
                "worker RSS, idle after start-up",
                before_mb,
                "MiB",
                detail=f"one process, {idle['Threads']} threads",
            )
        )
        self.add(
            Figure(
                "rss_after",
                f"worker RSS, idle again after draining {n:,} jobs",
                after_mb,
                "MiB",
                detail=f"{after_mb - before_mb:+.1f} MiB; peak (VmHWM) "
                f"{kib_to_mib(after['VmHWM']):.1f} MiB",
            )
        )
        self.add(
            Figure(
                "drain_running",
                f"drain of {n:,} jobs enqueued to a running worker, "
                f"slots {self.worker_slots()}: database clock",
                n / span,
                "jobs/s",
                ceiling="pgbench_batch",
                detail=f"over {span:.1f} s; {n / self.claims():.1f} jobs per claim; worker CPU "
                f"{cpu / n * 1e6:,.0f} µs/job",
            )
        )

    def phase_pgbench(self) -> None:
        binary = shutil.which("pgbench")
        if binary is None:
            self.notes.append("pgbench is not installed: no ceilings, no ratios.")
            say("  pgbench not found; skipped")
            return
        seconds = self.scale.pgbench_seconds
        for key, script, clients, jobs, label in (
            ("pgbench_one", "lifecycle_one.sql", 2, 1, "ceiling (a): insert, claim, ack one job"),
            (
                "pgbench_batch",
                "lifecycle_batch.sql",
                2,
                100,
                "ceiling (b): insert, claim, ack 100 jobs",
            ),
            ("pgbench_insert_one", "enqueue_one.sql", 1, 1, "insert-only ceiling: one row"),
            (
                "pgbench_insert_batch",
                "enqueue_batch.sql",
                1,
                1000,
                "insert-only ceiling: 1,000 rows",
            ),
        ):
            self.truncate()
            tps, latency = self.pgbench(binary, script, clients, seconds)
            counts = self.count_jobs()
            if script.startswith("lifecycle"):
                left = counts.get("queued", 0) + counts.get("running", 0)
                if left > clients * jobs:
                    raise BenchError(f"{script} left {left} jobs unsettled: {counts}")
            self.add(
                Figure(
                    key,
                    f"pgbench {label} per transaction set",
                    tps * jobs,
                    "jobs/s",
                    detail=f"`{script}`, -c {clients} -j {clients} -T {seconds}: "
                    f"{tps:,.1f} tps, latency {latency} ms",
                )
            )
        self.truncate()

    def pgbench(self, binary: str, script: str, clients: int, seconds: int) -> tuple[float, str]:
        env = dict(os.environ)
        if self.database.get("PASSWORD"):
            env["PGPASSWORD"] = self.database["PASSWORD"]
        argv = [
            binary,
            "-n",
            "-c",
            str(clients),
            "-j",
            str(clients),
            "-T",
            str(seconds),
            "-f",
            str(PGBENCH_DIR / script),
            self.conninfo(self.dbname, password=False),
        ]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=seconds + 120, env=env, check=False
        )
        output = done.stdout + done.stderr
        match = re.search(r"tps = ([\d.]+) \(without initial connection time\)", output)
        if done.returncode != 0 or match is None or "aborted" in output:
            raise BenchError(f"pgbench {script} failed ({done.returncode}):\n{output[-2000:]}")
        latency = re.search(r"latency average = ([\d.]+) ms", output)
        return float(match.group(1)), latency.group(1) if latency else "?"

    # -- results --------------------------------------------------------------------------------

    def compare(self) -> None:
        for figure in self.figures.values():
            for name, attr in (("ceiling", "ratio"), ("insert_ceiling", "insert_ratio")):
                ceiling = self.figures.get(getattr(figure, name) or "")
                if ceiling is not None and ceiling.value:
                    setattr(figure, attr, figure.value / ceiling.value)

    def table(self) -> str:
        lines = [
            "| Figure | Value | vs lifecycle ceiling | vs insert-only ceiling | Details |",
            "| --- | ---: | ---: | ---: | --- |",
        ]
        for figure in self.figures.values():
            lines.append(
                f"| {figure.label} | {fmt(figure.value)} {figure.unit} | {ratio(figure.ratio)} "
                f"| {ratio(figure.insert_ratio)} | {figure.detail} |"
            )
        return "\n".join(lines)


def fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def spread(values: Sequence[float]) -> str:
    return f"{fmt(min(values))}-{fmt(max(values))}"


# -- the page -----------------------------------------------------------------------------------

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

Drain throughput is jobs divided by the time from the first `started_at` to the last
`finished_at`, both written by the database's clock. The wall-clock figure adds the worker's
start-up (Django set-up, connections, the wake's first probe) and its burst exit, which the
"burst worker on an empty queue" row times alone. With `--processes 2` each of the two children
has the given number of slots. Beside each drain: jobs per claim (the rows one claim statement
takes share its `now()`), transactions per 1,000 jobs (`pg_stat_database`: claims, acks,
heartbeats and registry writes together), and the worker's CPU per job, as measured and net of
the CPU that one start and exit cost (counted three times with `--processes 2`: the supervisor
and each child set Django up).

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
of 1,000, each one durable step that stores its cursor and count, and one ledger write) and
times its run by the database's clock; then it runs a plain loop of `UPDATE ... WHERE id BETWEEN`
over the same rows, in the same batches, with the same update, from one session. The figure to
read is the backfill's rows/s as a share of the plain loop's: what the cursor, the steps and the
ledger cost.

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


# -- the command --------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark ultimat3-jobs on PostgreSQL (see docs/benchmarks.md)."
    )
    parser.add_argument("--quick", action="store_true", help="about ten times smaller")
    parser.add_argument(
        "--phases",
        default=",".join(PHASES),
        help=f"comma-separated phases to run (default: all of {','.join(PHASES)})",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="write the results page here (default: docs/benchmarks.md after a full run of "
        "every phase, nowhere otherwise)",
    )
    parser.add_argument("--no-docs", action="store_true", help="write no results page")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    parser.add_argument(
        "--peers",
        action="store_true",
        help="instead of the phases: ultimat3-jobs, pgqueuer and Procrastinate side by side, "
        "written to the page's side-by-side section (with --quick: a smoke run, written nowhere)",
    )
    parser.add_argument(
        "--redis-peers",
        action="store_true",
        help="instead of the phases: the Redis driver beside the PostgreSQL driver, Celery and "
        "RQ, written to the page's Redis section (with --quick: a smoke run, written nowhere)",
    )
    args = parser.parse_args(argv)
    phases = [phase.strip() for phase in args.phases.split(",") if phase.strip()]
    unknown = sorted(set(phases) - set(PHASES))
    if unknown or not phases:
        parser.error(f"unknown phase(s) {', '.join(unknown)}; known: {', '.join(PHASES)}")
    args.phases = phases
    if args.output is None and not args.quick and set(phases) == set(PHASES):
        args.output = DOCS_PAGE
    if args.no_docs:
        args.output = None
    return args


def on_signal(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, on_signal)
    if args.peers:
        return run_side_by_side(quick=args.quick, page=None if args.no_docs else DOCS_PAGE)
    if args.redis_peers:
        return run_redis_side_by_side(quick=args.quick, page=None if args.no_docs else DOCS_PAGE)
    started = dt.datetime.now(dt.UTC)
    bench = Bench(args)
    failed = guarded(bench.run, bench.close)
    if failed is not None:
        return failed
    runtime = time.perf_counter() - STARTED
    say(f"done in {runtime / 60:.1f} minutes")
    print(bench.table())
    if args.output is not None:
        old = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        page = keep_section(old, render(bench, runtime, started))
        page = keep_section(old, page, REDIS_START, REDIS_END)
        args.output.write_text(page, encoding="utf-8")
        say(f"wrote {args.output}")
    if args.json is not None:
        payload = {
            "date": started.isoformat(),
            "quick": args.quick,
            "runtime_seconds": round(runtime, 1),
            "machine": bench.facts,
            "phase_load": bench.phase_load,
            "notes": bench.notes,
            "figures": [asdict(figure) for figure in bench.figures.values()],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
