"""``ShedPacer``: how long a run shed for a busy concurrency key waits in the queue before it
is due again: longer the more runs of that key this worker shed lately, jittered, capped, so a
crowd of one busy key spreads out instead of coming back together."""

from __future__ import annotations

import random
import threading
import time

SHED_BASE_SECONDS = 0.05
"""A busy concurrency key's first shed waits about this long; each shed of the key within
:data:`SHED_WINDOW_SECONDS` adds as much again, up to :data:`SHED_CAP_SECONDS`."""
SHED_CAP_SECONDS = 30.0
SHED_WINDOW_SECONDS = 30.0
RATE_SLACK_SECONDS = 0.01


class ShedPacer:
    """How long a job shed for a busy concurrency key waits: longer the more jobs of that key
    this worker shed within the window, jittered, capped."""

    def __init__(self, *, rng: random.Random | None = None) -> None:
        self._recent: dict[str, tuple[int, float]] = {}
        self._rng = rng or random.Random()
        self._lock = threading.Lock()

    def delay(self, key: str) -> float:
        now = time.monotonic()
        with self._lock:
            count, since = self._recent.get(key, (0, now))
            if now - since > SHED_WINDOW_SECONDS:
                count, since = 0, now
            count += 1
            self._recent[key] = (count, since)
            if len(self._recent) > 10_000:  # forget the oldest keys
                for old in sorted(self._recent, key=lambda k: self._recent[k][1])[:5_000]:
                    del self._recent[old]
        wait = min(SHED_CAP_SECONDS, SHED_BASE_SECONDS * count)
        return wait * self._rng.uniform(0.5, 1.5)

    def rate_delay(self, retry_after: float) -> float:
        """A rate stamp's wait is exact: due just after it, with a little slack."""
        return retry_after + RATE_SLACK_SECONDS * self._rng.uniform(1.0, 2.0)
