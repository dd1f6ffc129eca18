"""The phases that time one call path or one idle worker: ``enqueue_many``, ``enqueue``, the
wake latency, the idle statements and the worker's memory after a long drain."""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING

import psycopg

from bench.ceilings import paired_ceiling
from bench.figures import QUIET_BACKGROUND, WAKE_LIVE, WORKER_STARTED, Figure, spread
from bench.support import BenchError, kib_to_mib, percentile, proc_status, process_cpu_seconds, say

if TYPE_CHECKING:
    from bench.core import Bench


def phase_enqueue_many(bench: Bench) -> None:
    """``enqueue_many`` calls, each just after a run of the insert-only ceilings into the same
    emptied table (:class:`~bench.ceilings.PairedCeiling`): the ratio is the median of the
    pairs' ratios, each of two runs a second apart, rather than of two medians taken minutes
    apart under another load."""
    n, pairs = bench.scale.enqueue_many_jobs, bench.scale.enqueue_many_pairs
    bench.warm_up()
    ceiling = paired_ceiling(bench, n)
    rates: list[float] = []
    batch: list[float] = []
    call: list[float] = []
    for _ in range(pairs):
        if ceiling is not None:
            batch.append(ceiling.batch())
            call.append(ceiling.call())
        bench.truncate()
        inputs = [{} for _ in range(n)]
        start = time.perf_counter()
        results = bench.noop().enqueue_many(inputs)
        elapsed = time.perf_counter() - start
        if len(results) != n or bench.count_jobs() != {"queued": n}:
            raise BenchError(f"enqueue_many of {n} left {bench.count_jobs()}")
        rates.append(n / elapsed)
    detail = f"median of {pairs} runs ({spread(rates)}); one session"
    figure = Figure(
        "enqueue_many",
        f"`enqueue_many`, {n:,} no-op jobs in one call",
        statistics.median(rates),
        "jobs/s",
        ceiling="pgbench_batch",
        detail=detail,
    )
    if ceiling is None:
        bench.add(figure)
    else:
        per_statement = [ours / theirs for ours, theirs in zip(rates, batch, strict=True)]
        per_call = [ours / theirs for ours, theirs in zip(rates, call, strict=True)]
        figure.insert_ceiling = "pgbench_insert_paired"
        figure.insert_ratio = statistics.median(per_statement)
        figure.detail = (
            f"{detail}; insert-only ratio: median of the {pairs} paired ratios "
            f"({ratio_spread(per_statement)}); against the rows committed once "
            f"(`pgbench_insert_call`) {statistics.median(per_call):.2f}x "
            f"({ratio_spread(per_call)}); fastest run against fastest run "
            f"{max(rates) / max(batch):.2f}x and {max(rates) / max(call):.2f}x"
        )
        bench.add(figure)
        bench.add(
            Figure(
                "pgbench_insert_paired",
                f"pgbench insert-only ceiling: {ceiling.rows:,} rows into an emptied table, "
                "1,000 per autocommit statement, run just before each `enqueue_many` call",
                statistics.median(batch),
                "jobs/s",
                detail=f"`enqueue_batch.sql`, -c 1 -t {ceiling.statements}: median of "
                f"{pairs} runs ({spread(batch)})",
            )
        )
        bench.add(
            Figure(
                "pgbench_insert_call",
                f"pgbench insert-only ceiling committed once: {ceiling.rows:,} rows in one "
                "transaction, one 1,000-row INSERT per chunk, no conflict clause",
                statistics.median(call),
                "jobs/s",
                detail=f"`enqueue_batch.sql`'s INSERT without `on conflict ... returning` "
                f"{ceiling.statements} times between `begin` and `commit`, -c 1 -t 1: median "
                f"of {pairs} runs ({spread(call)})",
            )
        )


def ratio_spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}x"


def phase_enqueue(bench: Bench) -> None:
    n, repeats = bench.scale.enqueue_calls, bench.scale.repeats
    bench.warm_up()
    noop = bench.noop()
    rates = []
    for _ in range(repeats):
        bench.truncate()
        start = time.perf_counter()
        for _ in range(n):
            noop.enqueue()
        elapsed = time.perf_counter() - start
        if bench.count_jobs() != {"queued": n}:
            raise BenchError(f"{n} enqueues left {bench.count_jobs()}")
        rates.append(n / elapsed)
    bench.add(
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


def phase_latency(bench: Bench) -> None:
    for wake in (True, False):
        latency_once(bench, wake)


def latency_once(bench: Bench, wake: bool) -> None:
    samples = bench.scale.latency_samples
    low, high = bench.scale.latency_gap
    bench.truncate()
    worker = bench.start_worker("--log-level", "INFO", wake=wake, name="latency")
    worker.wait_for_log(WAKE_LIVE if wake else WORKER_STARTED, timeout=30)
    time.sleep(1.0)
    noop = bench.noop()
    for _ in range(samples):
        noop.enqueue()
        time.sleep(bench.rng.uniform(low, high))
    deadline = time.monotonic() + 30
    while bench.sql("select count(*) from x_jobs where started_at is null")[0][0]:
        if time.monotonic() > deadline:
            raise BenchError("enqueued jobs did not start within 30 s")
        time.sleep(0.1)
    rows = bench.sql(
        "select extract(epoch from started_at - created_at)::float8 * 1000 from x_jobs"
    )
    latencies = [float(row[0]) for row in rows]
    bench.workers.remove(worker)
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
        bench.add(
            Figure(
                f"{key}_{name}",
                f"enqueue → start, idle worker, {mode}: {name}",
                value,
                "ms",
                detail=f"{samples} samples, {gap}" if name == "p50" else "",
            )
        )


def phase_idle(bench: Bench) -> None:
    for wake in (True, False):
        idle_once(bench, wake)


def idle_once(bench: Bench, wake: bool) -> None:
    warmup, window = bench.scale.idle_warmup, bench.scale.idle_window
    bench.truncate()
    autovacuum_before = bench.autovacuum_runs()
    bench.disconnect_bench_database()
    worker = bench.start_worker("--log-level", "INFO", wake=wake, name="idle")
    worker.wait_for_log(WAKE_LIVE if wake else WORKER_STARTED, timeout=30)
    say(f"  idle worker up; {warmup:g} s to reach its poll ceiling, then {window:g} s counted")
    time.sleep(warmup)
    best: tuple[int, int, float, str] | None = None
    for attempt in range(1, bench.scale.idle_attempts + 1):
        counted, noise, elapsed, sessions = idle_window(bench, window)
        say(f"  window {attempt}: {counted} transactions; background {noise}")
        if best is None or noise < best[1]:
            best = (counted, noise, elapsed, sessions)
        if noise <= QUIET_BACKGROUND:
            break
    assert best is not None
    counted, noise, elapsed, sessions = best
    if worker.popen.poll() is not None:
        raise BenchError(f"the idle worker exited:\n{worker.log_tail()}")
    bench.workers.remove(worker)
    worker.stop()
    autovacuum_runs = bench.autovacuum_runs() - autovacuum_before
    detail = (
        f"{counted} transactions in {elapsed:.1f} s; connected: {sessions}; background "
        f"{noise} (an idle session's catch-up transactions in another database)"
    )
    if autovacuum_runs:
        detail += f"; {autovacuum_runs} autovacuum/analyze run(s) fell in the window"
    mode = "wake live (default)" if wake else "wake off, polling only"
    bench.add(
        Figure(
            "idle" if wake else "idle_poll",
            f"statements per minute of one idle worker, {mode}",
            counted * 60 / elapsed,
            "/min",
            detail=detail,
        )
    )


def idle_window(bench: Bench, window: float) -> tuple[int, int, float, str]:
    """Count the bench database's transactions over ``window`` seconds, and beside them
    the catch-up transactions an idle session without statements runs in the control
    database meanwhile: PostgreSQL makes idle backends catch up on cache invalidations
    whenever any database of the server changes its schema, and counts each catch-up as a
    transaction. A quiet server shows 0; the worker's idle backends see the same."""
    control = psycopg.connect(
        bench.conninfo(bench.control_dbname), autocommit=True, application_name="bench-control"
    )
    try:
        control.execute("select 1")  # publishes its start-up transaction now
        time.sleep(1.5)
        control_before = bench.xacts(bench.control_dbname)
        before, start = bench.xacts(), time.perf_counter()
        time.sleep(window / 2)
        sessions = bench.sessions()
        time.sleep(window / 2)
        after, elapsed = bench.xacts(), time.perf_counter() - start
    finally:
        control.close()  # an idle backend publishes its counts only as it exits
    deadline = time.monotonic() + 10
    while bench.sessions(bench.control_dbname) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    return after - before, bench.xacts(bench.control_dbname) - control_before, elapsed, sessions


def phase_rss(bench: Bench) -> None:
    n = bench.scale.rss_jobs
    bench.truncate()
    worker = bench.start_worker("--log-level", "INFO", name="rss")
    worker.wait_for_log(WAKE_LIVE, timeout=30)
    time.sleep(3.0)
    idle = proc_status(worker.pid)
    say(f"  idle after start: VmRSS {idle['VmRSS']}, {idle['Threads']} threads")
    cpu_before = process_cpu_seconds(worker.pid)
    bench.noop().enqueue_many([{} for _ in range(n)])
    deadline = time.monotonic() + 120 + n / 100
    while True:
        counts = bench.count_jobs()
        if counts.get("completed", 0) == n:
            break
        if worker.popen.poll() is not None:
            raise BenchError(f"the worker exited during the drain:\n{worker.log_tail()}")
        if time.monotonic() > deadline:
            raise BenchError(f"the drain of {n} jobs did not end in time: {counts}")
        time.sleep(0.5)
    cpu = process_cpu_seconds(worker.pid) - cpu_before
    span = bench.db_span()
    time.sleep(3.0)
    after = proc_status(worker.pid)
    bench.workers.remove(worker)
    worker.stop()
    before_mb, after_mb = kib_to_mib(idle["VmRSS"]), kib_to_mib(after["VmRSS"])
    bench.add(
        Figure(
            "rss_idle",
            "worker RSS, idle after start-up",
            before_mb,
            "MiB",
            detail=f"one process, {idle['Threads']} threads",
        )
    )
    bench.add(
        Figure(
            "rss_after",
            f"worker RSS, idle again after draining {n:,} jobs",
            after_mb,
            "MiB",
            detail=f"{after_mb - before_mb:+.1f} MiB; peak (VmHWM) "
            f"{kib_to_mib(after['VmHWM']):.1f} MiB",
        )
    )
    bench.add(
        Figure(
            "drain_running",
            f"drain of {n:,} jobs enqueued to a running worker, "
            f"slots {bench.worker_slots()}: database clock",
            n / span,
            "jobs/s",
            ceiling="pgbench_batch",
            detail=f"over {span:.1f} s; {n / bench.claims():.1f} jobs per claim; worker CPU "
            f"{cpu / n * 1e6:,.0f} µs/job",
        )
    )
