"""The benchmark's run: its database set up, its worker processes, the drains every throughput
phase is built on, and the figures gathered and set beside their pgbench ceilings."""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench.ceilings import phase_pgbench
from bench.database import BenchDatabase
from bench.factories import phase_backfill, phase_purge
from bench.figures import (
    BACKLOG_CHUNK,
    DEFAULT_DRAIN,
    DRAIN_KEY,
    FULL,
    JOB_TABLES,
    PHASES,
    QUICK,
    Drained,
    Figure,
    fmt,
    ratio,
)
from bench.limits import phase_limits
from bench.phases import phase_enqueue, phase_enqueue_many, phase_idle, phase_latency, phase_rss
from bench.scale import phase_scale
from bench.steps import phase_steps
from bench.support import (
    ROOT,
    SETTINGS,
    BenchError,
    WorkerProcess,
    children_cpu_seconds,
    compile_sources,
    cpu_busy_seconds,
    load_average,
    machine_facts,
    say,
    subprocess_env,
    wait_until_idle,
)
from ultimat3_jobs.conf import WORKER_CONCURRENCY_DEFAULT


class Bench(BenchDatabase):
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
        compile_sources()  # a user's installed package is compiled (see compile_sources)
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
            "enqueue_many": lambda: phase_enqueue_many(self),
            "enqueue": lambda: phase_enqueue(self),
            "drain": self.phase_drain,
            "scale": lambda: phase_scale(self),
            "steps": lambda: phase_steps(self),
            "limits": lambda: phase_limits(self),
            "backfill": lambda: phase_backfill(self),
            "purge": lambda: phase_purge(self),
            "latency": lambda: phase_latency(self),
            "idle": lambda: phase_idle(self),
            "rss": lambda: phase_rss(self),
            "pgbench": lambda: phase_pgbench(self),
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

    def phase_drain(self) -> None:
        n = self.scale.drain_jobs
        for processes in self.scale.drain_processes:
            for concurrency in self.scale.drain_concurrency:
                self.drain_once(n, processes, concurrency)
        # The worker as a user starts it: no --concurrency, so the package's default slots
        # (the bench settings' WORKER_CONCURRENCY is the side-by-side's, not a default).
        self.drain_once(n, 2, WORKER_CONCURRENCY_DEFAULT, key=DEFAULT_DRAIN)

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
        # A claim stamps its rows with one now(); under a declared limit a lease grant or a
        # settle that hands a slot on stamps the runs it starts too, so there it counts stamps.
        limited = handle is not None and handle.definition.limited
        per_stamp = "jobs per start stamp" if limited else "jobs per claim"
        detail = (
            f"over {span:.2f} s; {n / claims:.1f} {per_stamp}; {xacts / n * 1000:,.0f} "
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

    def wait_completed(
        self, n: int, worker: WorkerProcess, timeout: float, *, stop: bool = True
    ) -> None:
        """Until no job is queued or running (two index probes a poll), then ``n`` completed;
        then stops the worker, unless ``stop`` is false."""
        deadline = time.monotonic() + timeout
        while self.work_left() or self.count_jobs().get("completed", 0) < n:
            if worker.popen.poll() is not None:
                raise BenchError(f"the worker exited {worker.popen.returncode}")
            if time.monotonic() > deadline:
                raise BenchError(f"the drain of {n} jobs did not end in {timeout:.0f} s")
            time.sleep(0.05)
        if stop:
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
        """Distinct start stamps: the claims that took jobs (one ``now()`` each), plus, under a
        limit, the lease grants and slot hand-offs that stamp the runs they start."""
        return int(self.sql("select count(distinct started_at) from x_jobs")[0][0])

    # -- results --------------------------------------------------------------------------------

    def compare(self) -> None:
        self.default_share()
        for figure in self.figures.values():
            for name, attr in (("ceiling", "ratio"), ("insert_ceiling", "insert_ratio")):
                ceiling = self.figures.get(getattr(figure, name) or "")
                if ceiling is not None and ceiling.value and getattr(figure, attr) is None:
                    setattr(figure, attr, figure.value / ceiling.value)

    def default_share(self) -> None:
        """The default slots' drain as a share of the best 20,000-job drain of this run (any
        processes, any slots): how much a user who never sets ``--concurrency`` leaves."""
        default = self.figures.get(DEFAULT_DRAIN)
        drains = [
            figure
            for key, figure in self.figures.items()
            if DRAIN_KEY.fullmatch(key)
            and f" {self.scale.drain_jobs:,} no-op jobs," in figure.label
        ]
        if default is None or not drains:
            return
        best = max(drains, key=lambda figure: figure.value)
        self.add(
            Figure(
                "drain_default_share",
                f"drain with the default {WORKER_CONCURRENCY_DEFAULT} slots (no `--concurrency`), "
                "2 processes, as a share of the best drain of this run",
                default.value / best.value * 100,
                "%",
                detail=f"best: {best.label.split(': ')[0].removeprefix('drain of ')}, "
                f"{fmt(best.value)} jobs/s",
            )
        )

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
