"""The pgbench ceilings: the same SQL as the library's, run by pgbench with no Python in the
path (``bench/pgbench/*.sql``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from bench.figures import Figure
from bench.support import BenchError, say

if TYPE_CHECKING:
    from bench.core import Bench

PGBENCH_DIR = Path(__file__).resolve().parent / "pgbench"


def phase_pgbench(bench: Bench) -> None:
    binary = shutil.which("pgbench")
    if binary is None:
        bench.notes.append("pgbench is not installed: no ceilings, no ratios.")
        say("  pgbench not found; skipped")
        return
    seconds = bench.scale.pgbench_seconds
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
        bench.truncate()
        tps, latency = run_pgbench(bench, binary, script, clients, seconds)
        counts = bench.count_jobs()
        if script.startswith("lifecycle"):
            left = counts.get("queued", 0) + counts.get("running", 0)
            if left > clients * jobs:
                raise BenchError(f"{script} left {left} jobs unsettled: {counts}")
        bench.add(
            Figure(
                key,
                f"pgbench {label} per transaction set",
                tps * jobs,
                "jobs/s",
                detail=f"`{script}`, -c {clients} -j {clients} -T {seconds}: "
                f"{tps:,.1f} tps, latency {latency} ms",
            )
        )
    bench.truncate()


def run_pgbench(
    bench: Bench, binary: str, script: str, clients: int, seconds: int
) -> tuple[float, str]:
    env = dict(os.environ)
    if bench.database.get("PASSWORD"):
        env["PGPASSWORD"] = bench.database["PASSWORD"]
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
        bench.conninfo(bench.dbname, password=False),
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
