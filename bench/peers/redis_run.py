"""The Redis side-by-side run: the Redis driver beside the PostgreSQL driver, Celery (Redis
transport) and RQ, one after the other, the same workload each.

Per system and round: empty its store, enqueue the backlog in batches (its side module, in its
own interpreter, reports the rate), start two worker processes with its documented command, and
time them from their start to the benchmark reading no job left in its store twice in a row
(the time of the first of the two reads counts). Then, with the same workers idle, time single
jobs from just before the enqueue call to the body's first line. Celery and RQ live in
throw-away virtualenvs under ``.local/bench-venvs/``, never in the project's dependencies.

Where it runs, so that two copies (two checkouts) can run at once on one server:

- Redis: ``ULTIMAT3_BENCH_REDIS_URL`` names the server and a database number n (default
  ``redis://127.0.0.1:6379/11``); the Redis driver uses database n, Celery n+1 and RQ n+2, and
  the run refuses to start when n+2 is past the server's last database. It deletes keys in
  those three databases only (never FLUSHALL/FLUSHDB): the driver's ``{ultimat3_jobs}`` keys in
  n, every key in n+1 and n+2, which belong to the run.
- PostgreSQL: the PostgreSQL driver runs in ``<ULTIMAT3_BENCH_DATABASE>_redis_pg`` (default
  ``ultimat3_bench_redis_pg``) on the server ``DATABASE_URL`` names, dropped and created afresh.

RQ's share: RQ's default worker forks a work horse for every job, so its drain runs at a flat
rate (73-92 jobs/s on a quiet host, about 20 on a loaded one, whatever the backlog), and 20,000
jobs took it about 4.5 minutes a round, half of a 29-minute run. It drains ``Workload.rq_jobs``
(1,000) a round instead: about 12 s a round on a quiet host, a minute on a loaded one. Its two
workers' start-up (about 1 s, counted as for every system) weighs some 8 per cent of that
drain, which if anything lowers its figure; the issue's bar for RQ (the Redis driver's drain at
least 20x RQ's) stands well clear of that. Every other system, ours included, drains the full
backlog in three rounds; the wake samples (200 a system) are the same for all, as before.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from bench.peers.redis_targets import (
    SLOTS,
    Target,
    check_databases,
    postgres_database,
    redis_urls,
    targets,
)
from bench.peers.report import number, ratio, splice
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
)

PROCESSES = 2
POLL_SECONDS = 0.02
START = "<!-- redis side-by-side: written by bench/run.py --redis-peers -->"
END = "<!-- redis side-by-side: end -->"


@dataclass(frozen=True)
class Workload:
    jobs: int = 20_000
    batch: int = 1_000
    samples: int = 200
    gap: tuple[float, float] = (0.2, 0.4)
    rounds: int = 3
    rq_jobs: int = 1_000
    """RQ's backlog a round (see the module's docstring): its drain rate is flat."""

    def backlog(self, target: Target) -> int:
        return min(self.jobs, self.rq_jobs) if target.key == "rq" else self.jobs


FULL = Workload()
QUICK = Workload(jobs=1_000, samples=10, rounds=1, rq_jobs=200)


class RedisSideBySide:
    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.server = Server()
        self.tmp = Path(tempfile.mkdtemp(prefix="ultimat3-redis-peers-"))
        self.workers: list[WorkerProcess] = []
        self.targets = targets(self.server)
        self.results: dict[str, dict[str, float]] = {}
        self.details: dict[str, str] = {}
        self.load: dict[str, str] = {}

    def prepare(self, target: Target) -> None:
        venv = target.venv()
        if venv is not None and not (venv / "bin" / "python").exists():
            say(f"creating {venv.relative_to(ROOT)}: pip install {' '.join(target.packages)}")
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *target.packages]
            subprocess.run(pip, check=True, timeout=600)
        if target.key == "ours_postgres":
            self.server.recreate(postgres_database())
            env = target.env()
            argv = [sys.executable, "-m", "django", "migrate", "-v", "0"]
            self.call([*argv, "--settings", "bench.settings"], env)

    def call(self, argv: list[str], env: dict[str, str]) -> str:
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise BenchError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
        return done.stdout

    def side(self, target: Target, *args: str) -> dict[str, Any]:
        env = target.env()
        output = self.call([target.python(), "-m", target.side, *args, "--dsn", target.dsn], env)
        return json.loads(output.strip().splitlines()[-1])

    def run(self) -> None:
        check_databases(redis_urls()[0])
        compile_sources()  # as pip compiled the peers' packages (see compile_sources)
        for target in self.targets:
            self.prepare(target)
        for target in self.targets:
            self.load[target.key] = load_average()
            say(f"{target.label} (load average {self.load[target.key]})")
            try:
                self.measure(target)
            finally:
                self.stop_workers()

    def measure(self, target: Target) -> None:
        w, result = self.workload, self.results.setdefault(target.key, {})
        enqueue_rates, drain_rates = [], []
        for _ in range(w.rounds):
            self.stop_workers()
            enqueue_rate, drain_rate = self.enqueue_and_drain(target)
            enqueue_rates.append(enqueue_rate)
            drain_rates.append(drain_rate)
        result["enqueue_rate"] = statistics.median(enqueue_rates)
        result["drain_rate"] = statistics.median(drain_rates)
        time.sleep(2.0)
        gap = [f"{w.gap[0]:g}", f"{w.gap[1]:g}"]
        sampled = self.side(target, "latency", "--samples", str(w.samples), "--gap", *gap)
        result["wake_p50"] = statistics.median(sampled["latency_ms"])
        result["wake_p95"] = percentile(sampled["latency_ms"], 95)
        result["enqueue_call_p50"] = statistics.median(sampled["enqueue_call_ms"])
        self.details[target.key] = (
            f"enqueue {spread(enqueue_rates)}, drain {spread(drain_rates)} jobs/s over "
            f"{len(drain_rates)} round(s) of {w.backlog(target):,} jobs"
        )
        say(f"  wake p50 {result['wake_p50']:.2f} ms, p95 {result['wake_p95']:.2f} ms")

    def enqueue_and_drain(self, target: Target) -> tuple[float, float]:
        w, jobs = self.workload, self.workload.backlog(target)
        target.reset()
        enqueued = self.side(target, "enqueue", "--jobs", str(jobs), "--batch", str(w.batch))
        say(f"  enqueue_many: {enqueued['rate']:,.0f} jobs/s")
        if (pending := target.pending()) != jobs:
            raise BenchError(f"{jobs} enqueued jobs left {pending} pending in {target.label}")
        env = target.env()
        start = time.perf_counter()
        for index in range(PROCESSES):
            log = self.tmp / f"{target.key}-{index}.log"
            self.workers.append(WorkerProcess(target.argv(target.worker), log, env=env))
        deadline, first_zero = start + 120 + jobs / 20, None
        while True:
            if target.pending():
                first_zero = None
            elif first_zero is None:
                first_zero = time.perf_counter()
            else:
                break
            self.check_workers(deadline)
            time.sleep(POLL_SECONDS)
        drain = first_zero - start
        say(f"  drain: {jobs / drain:,.0f} jobs/s ({drain:.2f} s)")
        return enqueued["rate"], jobs / drain

    def check_workers(self, deadline: float) -> None:
        for worker in self.workers:
            if worker.popen.poll() is not None:
                raise BenchError(f"a worker exited {worker.popen.returncode}:\n{worker.log_tail()}")
        if time.perf_counter() > deadline:
            raise BenchError("the drain did not end in time")

    def stop_workers(self) -> None:
        while self.workers:
            self.workers.pop().stop()

    def close(self) -> None:
        self.stop_workers()
        shutil.rmtree(self.tmp, ignore_errors=True)


def spread(values: list[float]) -> str:
    return f"{min(values):,.0f}-{max(values):,.0f}"


COLUMNS = (
    ("enqueue_rate", "enqueue jobs/s (batches of 1,000)", "", True),
    ("drain_rate", "drain jobs/s (2 processes)", "", True),
    ("wake_p50", "wake p50", " ms", False),
    ("wake_p95", "wake p95", " ms", False),
    ("enqueue_call_p50", "enqueue call p50", " ms", False),
)


def redis_table(runner: RedisSideBySide) -> str:
    lines = ["| system | " + " | ".join(c[1] for c in COLUMNS) + " |"]
    lines.append("| --- |" + " ---: |" * len(COLUMNS))
    for target in runner.targets:
        values = runner.results.get(target.key, {})
        cells = [number(values[k]) + unit if k in values else "—" for k, _, unit, _ in COLUMNS]
        lines.append(f"| {target.label} | " + " | ".join(cells) + " |")
    ours = runner.results.get("ours_redis", {})
    for target in runner.targets[1:]:
        peer = runner.results.get(target.key, {})
        cells = [ratio(ours.get(k), peer.get(k)) for k, *_ in COLUMNS]
        lines.append(f"| Redis driver / {target.label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_redis_side_by_side(*, quick: bool, page: Path | None) -> int:
    """Run the four systems; print the table; write the page's section after a full run."""
    workload = QUICK if quick else FULL
    started = dt.datetime.now(dt.UTC)
    runner = RedisSideBySide(workload)
    failed = guarded(runner.run, runner.close)
    if failed is not None:
        return failed
    print(redis_table(runner))
    if page is not None and not quick:
        text = section(runner, workload, started, time.perf_counter() - STARTED)
        page.write_text(splice(page.read_text(encoding="utf-8"), text, START, END), "utf-8")
        say(f"wrote the Redis side-by-side section of {page}")
    return 0


def section(runner: RedisSideBySide, w: Workload, started: dt.datetime, runtime: float) -> str:
    facts = machine_facts()
    version = redis.Redis.from_url(redis_urls()[0]).info("server").get("redis_version", "?")
    commands = "\n".join(
        f"| {target.label} | `{' '.join(target.worker)}` |" for target in runner.targets
    )
    load = ", ".join(f"{target.label} {runner.load[target.key]}" for target in runner.targets)
    details = "\n".join(
        f"- {target.label}: {runner.details[target.key]}" for target in runner.targets
    )
    return f"""{START}
## Side by side on Redis: Celery and RQ

Written by `bench/run.py --redis-peers` on {started:%Y-%m-%d %H:%M} UTC, in {runtime / 60:.1f}
minutes.

- machine: {facts.get("cpu", "unknown CPU")}, {facts["cores"]} cores; Redis {version} and
  PostgreSQL on the same machine; Python {facts["python"]}
- load average (1 min) as each system started: {load}

The same workload for each system, one after the other in one run:

- **enqueue**: {w.jobs:,} no-op jobs ({w.rq_jobs:,} for RQ, below) in calls of {w.batch:,}
  (`enqueue_many` for ours, RQ's `Queue.enqueue_many`; Celery has no bulk publish, so its batch
  is one `delay()` per job); the rate over the calls alone.
- **drain**: the same jobs drained by {PROCESSES} worker processes started with the command
  below, timed from starting them to the benchmark reading an empty store twice in a row
  (every {POLL_SECONDS * 1000:.0f} ms; process start-up included). The median of {w.rounds}
  rounds, each on an emptied store with fresh workers. RQ drains {w.rq_jobs:,} jobs a round,
  not {w.jobs:,}: its worker forks for every job, so its rate is flat whatever the backlog,
  and the full backlog would take it most of the run; its workers' start-up (about 1 s) weighs
  a few per cent more in its shorter drain, which if anything lowers its figure.
- **wake**: {w.samples} single jobs, {w.gap[0]:g}-{w.gap[1]:g} s apart, each timed from just
  before its enqueue call to the first line of its body (the body sends `time.time()` back over
  UDP).

{redis_table(runner)}

Ratios are the Redis driver's figure divided by the other system's: above 1.00x is better for
the two throughput columns, below 1.00x for the others.

| system | worker command (two processes of it) |
| --- | --- |
{commands}

Ours runs {SLOTS} slots per process (the bench settings' `WORKER_CONCURRENCY`). Celery runs its
default prefork pool (one child per core) with results ignored; RQ's default worker forks a work
horse for every job. Both are installed with `pip install` into throw-away virtualenvs
(`.local/bench-venvs/`), never as dependencies of this project, which byte-compiles their
modules; the project's own sources are byte-compiled before the run to match. The code of the
run is `bench/peers/redis_run.py`. Each system has a Redis database of its own: n, n+1 and n+2
of `ULTIMAT3_BENCH_REDIS_URL` (this run: {redis_urls()[0].rsplit("/", 1)[1]} to
{redis_urls()[2].rsplit("/", 1)[1]}); the PostgreSQL driver runs in `{postgres_database()}`, so
that two checkouts can run it at once with their own names.

{details}
{END}"""
