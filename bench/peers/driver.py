"""The side-by-side run: ultimat3-jobs, pgqueuer and Procrastinate, one after the other, the same
workload each, every system in a database of its own on the same server.

Per system: enqueue the backlog in batches (its side module, in its own interpreter, reports the
rate); start two worker processes with its documented command and time them from their start to
no job left unfinished in its own tables; with the same two workers idle, time single jobs from
just before the enqueue call to the body's first line; then count the transactions the two idle
workers commit (``pg_stat_database``, as the idle phase of ``bench/run.py`` does). Peers live in
throw-away virtualenvs under ``.local/bench-venvs/``, never in the project's dependencies.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import Any

import psycopg

from bench.peers import systems
from bench.peers.report import END, START, splice, table
from bench.peers.server import Server
from bench.support import (
    ROOT,
    STARTED,
    BenchError,
    WorkerProcess,
    compile_sources,
    guarded,
    load_average,
    machine_facts,
    percentile,
    say,
    subprocess_env,
)

PGQUEUER_VERSION = "1.6.0"
PROCRASTINATE_VERSION = "3.10.0"
PROCESSES = 2
POLL_SECONDS = 0.05
CONTROL_DATABASE = "ultimat3_bench_control"


@dataclass(frozen=True)
class Workload:
    jobs: int = 20_000
    batch: int = 1_000
    samples: int = 200
    gap: tuple[float, float] = (0.2, 0.5)
    idle_warmup: float = 15.0
    idle_window: float = 60.0
    idle_attempts: int = 2
    rounds: int = 3


FULL = Workload()
QUICK = Workload(
    jobs=2_000, samples=20, idle_warmup=13.0, idle_window=6.0, idle_attempts=1, rounds=1
)


class SideBySide:
    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.server = Server()
        self.tmp = Path(tempfile.mkdtemp(prefix="ultimat3-peers-"))
        self.workers: list[WorkerProcess] = []
        self.systems = [
            systems.ours(installed_version("ultimat3-jobs"), "ultimat3_bench_ours"),
            systems.pgqueuer(PGQUEUER_VERSION, "ultimat3_bench_pgqueuer"),
            systems.procrastinate(PROCRASTINATE_VERSION, "ultimat3_bench_procrastinate"),
        ]
        self.results: dict[str, dict[str, float]] = {}
        self.details: dict[str, list[str]] = {}
        self.load: dict[str, str] = {}

    # -- set-up ---------------------------------------------------------------------------------

    def use(self, system: systems.System) -> None:
        """Point this process's environment (which the subprocesses inherit) at ``system``."""
        url = self.server.url(system.database)
        os.environ["BENCH_PEER_DSN"] = url
        os.environ["PGDSN"] = url
        os.environ["ULTIMAT3_BENCH_DATABASE"] = system.database

    def environment(self, system: systems.System) -> None:
        venv = system.venv(ROOT)
        if venv is None or (venv / "bin" / "python").exists():
            return
        say(f"creating {venv.relative_to(ROOT)}: pip install {' '.join(system.packages)}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *system.packages],
            check=True,
            timeout=600,
        )

    def prepare(self, system: systems.System) -> None:
        self.environment(system)
        self.use(system)
        self.server.recreate(system.database)
        if system.key == "ours":
            argv = [sys.executable, "-m", "django", "migrate", "--settings", "bench.settings"]
            self.call([*argv, "-v", "0"])
        else:
            self.call(system.command(ROOT, system.install))

    def call(self, argv: list[str]) -> str:
        done = subprocess.run(
            argv, cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=900
        )
        if done.returncode != 0:
            raise BenchError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
        return done.stdout

    def side(self, system: systems.System, *args: str) -> dict[str, Any]:
        argv = [system.python(ROOT), "-m", system.side, *args]
        output = self.call([*argv, "--dsn", self.server.url(system.database)])
        return json.loads(output.strip().splitlines()[-1])

    # -- the workload ---------------------------------------------------------------------------

    def run(self) -> None:
        compile_sources()  # as pip compiled the peers' packages (see compile_sources)
        self.server.ensure(CONTROL_DATABASE)
        for system in self.systems:
            self.prepare(system)
        for system in self.systems:
            self.load[system.key] = load_average()
            say(f"{system.label} (load average {self.load[system.key]})")
            self.use(system)
            try:
                self.measure(system)
            finally:
                self.stop_workers()

    def measure(self, system: systems.System) -> None:
        w, result = self.workload, self.results.setdefault(system.key, {})
        details = self.details.setdefault(system.key, [])
        enqueue_rates, drain_rates = [], []
        while len(drain_rates) < w.rounds and w.jobs * sum(1 / r for r in drain_rates) < 60:
            self.stop_workers()
            enqueue_rate, drain_rate = self.enqueue_and_drain(system)
            enqueue_rates.append(enqueue_rate)
            drain_rates.append(drain_rate)
        result["enqueue_rate"] = statistics.median(enqueue_rates)
        result["drain_rate"] = statistics.median(drain_rates)
        details.append(
            f"enqueue {spread(enqueue_rates)}, drain {spread(drain_rates)} jobs/s "
            f"over {len(drain_rates)} round(s)"
        )
        time.sleep(2.0)
        gap = [f"{w.gap[0]:g}", f"{w.gap[1]:g}"]
        sampled = self.side(system, "latency", "--samples", str(w.samples), "--gap", *gap)
        latencies, calls = sampled["latency_ms"], sampled["enqueue_call_ms"]
        result["wake_p50"] = statistics.median(latencies)
        result["wake_p95"] = percentile(latencies, 95)
        result["enqueue_call_p50"] = statistics.median(calls)
        say(f"  wake p50 {result['wake_p50']:.2f} ms, p95 {result['wake_p95']:.2f} ms")
        self.check_workers(time.perf_counter() + 1)
        counted, noise, elapsed = self.idle(system)
        result["idle_per_min"] = counted * 60 / elapsed
        details.append(f"{counted} transactions in {elapsed:.1f} s, background {noise}")
        say(f"  idle: {counted} transactions in {elapsed:.1f} s (background {noise})")

    def enqueue_and_drain(self, system: systems.System) -> tuple[float, float]:
        """One round on emptied tables: the enqueue rate, then the drain rate of two fresh
        worker processes; they stay up for what follows."""
        w = self.workload
        with psycopg.connect(self.server.url(system.database), autocommit=True) as probe:
            probe.execute(system.reset_sql)
        enqueued = self.side(system, "enqueue", "--jobs", str(w.jobs), "--batch", str(w.batch))
        say(f"  enqueue_many: {enqueued['rate']:,.0f} jobs/s")
        with psycopg.connect(self.server.url(system.database), autocommit=True) as probe:
            pending = self.pending(probe, system)
            if pending != w.jobs:
                raise BenchError(f"{w.jobs} enqueued jobs left {pending} pending")
            start = time.perf_counter()
            for index in range(PROCESSES):
                log = self.tmp / f"{system.key}-{index}.log"
                self.workers.append(WorkerProcess(system.command(ROOT, system.worker), log))
            deadline = start + 120 + w.jobs / 50
            while self.pending(probe, system):
                self.check_workers(deadline)
                time.sleep(POLL_SECONDS)
            drain = time.perf_counter() - start
        say(f"  drain: {w.jobs / drain:,.0f} jobs/s ({drain:.2f} s)")
        return enqueued["rate"], w.jobs / drain

    def pending(self, probe: psycopg.Connection[Any], system: systems.System) -> int:
        row = probe.execute(system.pending_sql).fetchone()
        assert row is not None
        return int(row[0])

    def check_workers(self, deadline: float) -> None:
        for worker in self.workers:
            if worker.popen.poll() is not None:
                raise BenchError(f"a worker exited {worker.popen.returncode}:\n{worker.log_tail()}")
        if time.perf_counter() > deadline:
            raise BenchError("the drain did not end in time")

    def idle(self, system: systems.System) -> tuple[int, int, float]:
        """The quietest of up to ``idle_attempts`` windows: transactions of the system's
        database, and the catch-up transactions an idle control session runs meanwhile."""
        time.sleep(self.workload.idle_warmup)
        best: tuple[int, int, float] | None = None
        for _ in range(self.workload.idle_attempts):
            window = self.idle_window(system.database)
            if best is None or window[1] < best[1]:
                best = window
            if best[1] <= 1:
                break
        assert best is not None
        return best

    def idle_window(self, database: str) -> tuple[int, int, float]:
        control = psycopg.connect(self.server.url(CONTROL_DATABASE), autocommit=True)
        try:
            control.execute("select 1")
            time.sleep(1.5)
            control_before = self.server.xacts(CONTROL_DATABASE)
            before, start = self.server.xacts(database), time.perf_counter()
            time.sleep(self.workload.idle_window)
            after, elapsed = self.server.xacts(database), time.perf_counter() - start
        finally:
            control.close()
        deadline = time.monotonic() + 10
        while self.server.sessions(CONTROL_DATABASE) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        noise = self.server.xacts(CONTROL_DATABASE) - control_before
        return after - before, noise, elapsed

    def stop_workers(self) -> None:
        while self.workers:
            self.workers.pop().stop()

    def close(self) -> None:
        self.stop_workers()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def facts(self) -> dict[str, str]:
        facts = machine_facts()
        row = self.server.admin().execute("show server_version").fetchone()
        facts["postgres"] = str(row[0]) if row else "?"
        return facts


def spread(values: list[float]) -> str:
    return f"{min(values):,.0f}-{max(values):,.0f}"


def run_side_by_side(*, quick: bool, page: Path | None) -> int:
    """Run the three systems; print the table; write the page's section after a full run."""
    workload = QUICK if quick else FULL
    started = dt.datetime.now(dt.UTC)
    runner = SideBySide(workload)
    facts: dict[str, str] = {}
    failed = guarded(lambda: (facts.update(runner.facts()), runner.run()), runner.close)
    if failed is not None:
        return failed
    runtime = time.perf_counter() - STARTED
    rows = [(system.key, system.label) for system in runner.systems]
    print(table(rows, runner.results))
    if page is not None and not quick:
        text = section(runner, workload, facts, started, runtime)
        page.write_text(splice(page.read_text(encoding="utf-8"), text), encoding="utf-8")
        say(f"wrote the side-by-side section of {page}")
    return 0


def section(
    runner: SideBySide,
    workload: Workload,
    facts: dict[str, str],
    started: dt.datetime,
    runtime: float,
) -> str:
    rows = [(system.key, system.label) for system in runner.systems]
    commands = "\n".join(
        f"| {system.label} | `{system.shown(system.worker)}` |" for system in runner.systems
    )
    load = ", ".join(f"{system.label} {runner.load[system.key]}" for system in runner.systems)
    details = "\n".join(
        f"- {system.label}: {'; '.join(runner.details[system.key])}" for system in runner.systems
    )
    c = systems.CONCURRENCY
    return f"""{START}
## Side by side with pgqueuer and Procrastinate

Written by `bench/run.py --peers` on {started:%Y-%m-%d %H:%M} UTC, in {runtime / 60:.1f} minutes.

- machine: {facts.get("cpu", "unknown CPU")}, {facts["cores"]} cores; PostgreSQL {facts["postgres"]}
  on the same machine; Python {facts["python"]}
- load average (1 min) as each system started: {load}

The same workload for each system, one after the other in one run, each in a database of its
own:

- **enqueue**: {workload.jobs:,} no-op jobs in calls of {workload.batch:,}; the rate over the
  calls alone.
- **drain**: the same jobs drained by {PROCESSES} worker processes, each started with the command
  below, timed from starting them to the benchmark seeing no job left unfinished in the system's
  own table (read every {POLL_SECONDS * 1000:.0f} ms; process start-up included). The median of
  {workload.rounds} rounds (fewer once a system's drains have taken a minute), each on emptied
  tables with fresh workers.
- **wake**: {workload.samples} single jobs, {workload.gap[0]:g}-{workload.gap[1]:g} s apart so
  that the workers are idle, each timed from just before its enqueue call to the first line of
  its body (the body sends `time.time()` back over UDP: one clock, no statement added); beside
  it, the enqueue call's own duration.
- **idle**: the same two workers, idle; transactions committed in the system's database over
  {workload.idle_window:g} s after {workload.idle_warmup:g} s of warm-up, counted from
  `pg_stat_database` as in the idle phase above (each autocommit statement is one transaction;
  `pg_stat_statements` is not loaded on this server).

{table(rows, runner.results)}

Ratios are ours divided by the peer's: above 1.00x is better for the two throughput columns,
below 1.00x is better for the others.

| system | worker command (two processes of it) |
| --- | --- |
{commands}

pgqueuer runs over asyncpg with its default `--batch-size` of {systems.PGQUEUER_BATCH} (spelled
out) and no `--max-concurrent-tasks`. Procrastinate's `--concurrency` defaults to 1; it gets
{c} slots per process like ours (`--concurrency {c}`, also the bench settings'
`WORKER_CONCURRENCY`). The peers' no-op and stamp tasks are coroutines (`async def`); ours are
plain functions. The peers are installed with `pip install` into throw-away virtualenvs
(`.local/bench-venvs/`, created on the first run), never as dependencies of this project, and
pip byte-compiles their modules; the project's own sources are byte-compiled before the run to
match. With
pgqueuer goes `typer<0.29`, since typer 0.29 breaks `pgq run`'s `--log-level` in pgqueuer
{runner.systems[1].version}. The code of the run is in `bench/peers/`.

Spread over the rounds, and the idle windows (background: the catch-up transactions an idle
session runs meanwhile in an empty database, 0 or 1 on a quiet server):

{details}
{END}"""
