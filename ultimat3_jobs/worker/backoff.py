"""Idle backoff: how long an idle loop waits before it looks again."""

from __future__ import annotations


class IdleBackoff:
    """floor → doubling → ceiling. ``reset()`` after work or a wake; ``next()`` after an idle
    look. The ceiling is higher while a wake is live (the wake carries the latency, the poll is
    only the guarantee)."""

    def __init__(self, *, floor: float, ceiling: float, ceiling_with_wake: float) -> None:
        self.floor = floor
        self.ceiling = ceiling
        self.ceiling_with_wake = ceiling_with_wake
        self._current = floor

    def reset(self) -> None:
        self._current = self.floor

    def next(self, *, wake_live: bool = False) -> float:
        """The wait before the next look, then double it for the one after."""
        ceiling = self.ceiling_with_wake if wake_live else self.ceiling
        wait = min(self._current, ceiling)
        self._current = min(self._current * 2, ceiling)
        return wait
