"""Idle backoff: how long an idle loop waits before it looks again, and the settings of it that
every polling loop's config shares."""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import ultimat3_jobs.conf as conf
from ultimat3_jobs.runtime.common.config import FieldSource, FromSettings


@dataclass(frozen=True, slots=True, kw_only=True)
class PollTimes(FromSettings):
    """How a polling loop (the worker, the relay) waits when idle: ``poll_floor`` doubling up to
    ``poll_ceiling``, or ``poll_ceiling_wake`` while its wake is live. Times are in seconds."""

    poll_floor: float = conf.POLL_FLOOR_SECONDS_DEFAULT
    poll_ceiling: float = conf.POLL_CEILING_SECONDS_DEFAULT
    poll_ceiling_wake: float = conf.POLL_CEILING_WAKE_SECONDS_DEFAULT
    use_wake: bool = True

    SETTINGS: ClassVar[Mapping[str, FieldSource]] = {
        "poll_floor": "poll_floor_seconds",
        "poll_ceiling": "poll_ceiling_seconds",
        "poll_ceiling_wake": "poll_ceiling_wake_seconds",
    }


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

    @classmethod
    def of(cls, times: PollTimes) -> IdleBackoff:
        return cls(
            floor=times.poll_floor,
            ceiling=times.poll_ceiling,
            ceiling_with_wake=times.poll_ceiling_wake,
        )

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
