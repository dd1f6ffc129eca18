"""Idle backoff: how long an idle loop waits before it looks again."""

from __future__ import annotations

import heapq
import threading
import time


class IdleBackoff:
    """floor → doubling → ceiling. ``reset()`` after work or a wake; ``next()`` after an idle
    look. The ceiling is higher while a wake is live (the wake carries the latency, the poll is
    only the guarantee).

    ``due(at)`` says a job this loop can claim falls due at ``at`` (``time.monotonic()``), as a
    retry this worker just wrote does: no wait runs past it. Only times sooner than the highest
    ceiling are kept; the poll finds the others anyway."""

    def __init__(self, *, floor: float, ceiling: float, ceiling_with_wake: float) -> None:
        self.floor = floor
        self.ceiling = ceiling
        self.ceiling_with_wake = ceiling_with_wake
        self._current = floor
        self._due: list[float] = []
        self._due_lock = threading.Lock()

    def reset(self) -> None:
        self._current = self.floor

    def due(self, at: float) -> None:
        """Any thread: a claimable job falls due at ``at``."""
        if at - time.monotonic() >= max(self.ceiling, self.ceiling_with_wake):
            return
        with self._due_lock:
            heapq.heappush(self._due, at)

    def next(self, *, wake_live: bool = False, looked_at: float | None = None) -> float:
        """The wait before the next look, then double it for the one after. ``looked_at`` is
        when the look that found too little began (default: now): what fell due by then it
        has seen."""
        ceiling = self.ceiling_with_wake if wake_live else self.ceiling
        wait = min(self._current, ceiling)
        self._current = min(self._current * 2, ceiling)
        with self._due_lock:
            seen = time.monotonic() if looked_at is None else looked_at
            while self._due and self._due[0] <= seen:
                heapq.heappop(self._due)
            if self._due:
                wait = min(wait, max(0.0, self._due[0] - time.monotonic()))
        return wait
