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
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from types import FrameType

if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.core import Bench
from bench.figures import PHASES, Drained, Figure
from bench.page import render
from bench.peers.driver import run_side_by_side
from bench.peers.redis_run import END as REDIS_END
from bench.peers.redis_run import START as REDIS_START
from bench.peers.redis_run import run_redis_side_by_side
from bench.peers.report import keep_section
from bench.support import ROOT, STARTED, guarded, say

__all__ = ["Bench", "Drained", "Figure", "main"]  # the phase modules' names for them

DOCS_PAGE = ROOT / "docs" / "benchmarks.md"


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
