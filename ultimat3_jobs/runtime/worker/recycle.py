"""When a worker recycles itself: ``--max-jobs`` attempts settled, ``--max-memory`` exceeded."""

from __future__ import annotations

import os
import time

from ultimat3_jobs.runtime.worker.config import WorkerConfig

MEMORY_CHECK_SECONDS = 1.0


class Recycle:
    """Asked by the claim loop after each pass; reads the resident memory once a second."""

    def __init__(self, config: WorkerConfig) -> None:
        self._config = config
        self._next_memory_check = time.monotonic() + MEMORY_CHECK_SECONDS

    def room(self, started: int, free: int) -> int:
        """How many of ``free`` slots may start a body, ``started`` bodies so far."""
        if self._config.max_jobs is None:
            return free
        return max(0, min(free, self._config.max_jobs - started))

    def reason(self, *, settled: int) -> str | None:
        """Why the worker should stop now, or None."""
        max_jobs = self._config.max_jobs
        if max_jobs is not None and settled >= max_jobs:
            return f"--max-jobs {max_jobs} reached"
        limit = self._config.max_memory_mb
        now = time.monotonic()
        if limit is None or now < self._next_memory_check:
            return None
        self._next_memory_check = now + MEMORY_CHECK_SECONDS
        rss = resident_memory_mb()
        if rss is not None and rss > limit:
            return f"--max-memory: {rss:.0f} MB over {limit:g} MB"
        return None


def resident_memory_mb() -> float | None:
    """This process' resident memory, where ``/proc`` tells it."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
