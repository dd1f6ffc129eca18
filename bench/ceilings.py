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
BATCH_ROWS = 1000
"""Rows per statement of ``enqueue_batch.sql``, as per chunk of the driver's batch enqueue."""


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
        tps, latency = run_pgbench(bench, binary, script, clients, ["-T", str(seconds)])
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
    bench: Bench, binary: str, script: str | Path, clients: int, limit: list[str]
) -> tuple[float, str]:
    """One pgbench run of ``script`` (a name in ``bench/pgbench`` or a path), for ``limit``
    (``-T seconds`` or ``-t transactions`` per client): its tps, and its average latency."""
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
        *limit,
        "-f",
        str(PGBENCH_DIR / script),
        bench.conninfo(bench.dbname, password=False),
    ]
    timeout = (int(limit[1]) if limit[0] == "-T" else 0) + 120
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env=env, check=False
    )
    output = done.stdout + done.stderr
    match = re.search(r"tps = ([\d.]+) \(without initial connection time\)", output)
    if done.returncode != 0 or match is None or "aborted" in output:
        raise BenchError(f"pgbench {script} failed ({done.returncode}):\n{output[-2000:]}")
    latency = re.search(r"latency average = ([\d.]+) ms", output)
    return float(match.group(1)), latency.group(1) if latency else "?"


class PairedCeiling:
    """The insert-only ceiling run beside the ``enqueue_many`` calls, one run just before each
    call, on the table as the call finds it (emptied): ``enqueue_batch.sql`` for the call's
    rows, 1,000 per autocommit statement (the issue's ceiling), and the same rows committed
    once, as the call commits them (one transaction of 1,000-row INSERTs with no conflict
    clause and nothing returned, as ``job_enqueue_minted`` writes; the call itself writes them
    by one COPY, which pgbench cannot send). The ``pgbench`` phase's ceilings run for a
    fixed time at the end of the run, on a table that grows to about a million rows: a ratio
    taken against them mixes the host's load of two moments and two table sizes."""

    def __init__(self, bench: Bench, binary: str, rows: int) -> None:
        self.bench, self.binary = bench, binary
        self.statements = max(rows // BATCH_ROWS, 1)
        self.rows = self.statements * BATCH_ROWS
        insert = "\n".join(
            line
            for line in (PGBENCH_DIR / "enqueue_batch.sql").read_text().splitlines()
            if not line.startswith("--")
        )
        minted = insert.replace("on conflict do nothing\nreturning id;", ";")
        if minted == insert:
            raise BenchError("enqueue_batch.sql no longer ends as the paired ceiling expects")
        self.call_script = bench.tmp / "enqueue_call.sql"
        self.call_script.write_text(
            "begin;\n" + (minted.strip() + "\n") * self.statements + "commit;\n"
        )

    def batch(self) -> float:
        """``enqueue_batch.sql`` writing the call's rows into the emptied table: rows/s."""
        self.bench.truncate()
        tps, _ = run_pgbench(
            self.bench, self.binary, "enqueue_batch.sql", 1, ["-t", str(self.statements)]
        )
        return tps * BATCH_ROWS

    def call(self) -> float:
        """The call's rows committed once, as INSERTs, into the emptied table: rows/s."""
        self.bench.truncate()
        tps, _ = run_pgbench(self.bench, self.binary, self.call_script, 1, ["-t", "1"])
        return tps * self.rows


def paired_ceiling(bench: Bench, rows: int) -> PairedCeiling | None:
    binary = shutil.which("pgbench")
    return None if binary is None else PairedCeiling(bench, binary, rows)
