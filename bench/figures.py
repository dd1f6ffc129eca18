"""What the benchmark measures and how much of it: its phases, its two scales, and one figure
as the page shows it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

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
"""Catch-up transactions of the control session up to which a window counts as quiet."""
DEFAULT_DRAIN = "drain_default"
"""The key of the drain run with the package's default slots."""
DRAIN_KEY = re.compile(r"drain_p\d+_c\d+|drain_default|scale_p\d+_n\d+")
"""The keys of the drains (database clock) the default one is set against."""
BACKLOG_CHUNK = 100_000
"""Jobs per ``enqueue_many`` call when a backlog is laid down (bounds the benchmark's memory)."""


@dataclass(frozen=True)
class Scale:
    """How much each phase does; ``--quick`` divides it by about ten."""

    enqueue_many_jobs: int = 20_000
    enqueue_many_pairs: int = 7
    """``enqueue_many`` calls, each paired with a run of the insert-only ceilings."""
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
    enqueue_many_pairs=3,
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
