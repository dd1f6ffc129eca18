"""The scale curve: drain throughput as the work grows, in worker processes (1, 2 and 4) and in
backlog (the usual one and one fifty times larger), so a reader sees how the cost per job moves
with both. Each point is one ``Bench.drain_once`` with the same slots per process."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.run import Bench

SLOTS = 32
"""Slots per worker process at every point (the benchmark settings' ``WORKER_CONCURRENCY``)."""
PROCESSES = (1, 2, 4)
LARGE_PROCESSES = 2


def key(processes: int, jobs: int) -> str:
    return f"scale_p{processes}_n{jobs}"


def points(bench: Bench) -> list[tuple[int, int]]:
    """``(processes, backlog)`` of each point, in the order they run."""
    small, large = bench.scale.scale_backlog, bench.scale.scale_large_backlog
    return [(processes, small) for processes in PROCESSES] + [(LARGE_PROCESSES, large)]


def phase_scale(bench: Bench) -> None:
    for processes, jobs in points(bench):
        bench.drain_once(jobs, processes, SLOTS, key=key(processes, jobs))


def scale_table(bench: Bench) -> str:
    """The curve as its own table: one row per point that ran, with jobs/s by the database's
    clock, the ratio to one process on the usual backlog, and the worker CPU per job."""
    base = bench.figures.get(key(1, bench.scale.scale_backlog))
    lines = [
        "| Worker processes | Queued jobs at start | Drain jobs/s | vs 1 process | Details |",
        "| ---: | ---: | ---: | ---: | --- |",
    ]
    for processes, jobs in points(bench):
        figure = bench.figures.get(key(processes, jobs))
        if figure is None:
            continue
        versus = f"{figure.value / base.value:.2f}x" if base is not None and base.value else "—"
        lines.append(
            f"| {processes} | {jobs:,} | {figure.value:,.0f} | {versus} | {figure.detail} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""
