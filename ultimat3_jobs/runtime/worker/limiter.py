"""``ProcessLimiter``: the per-process limiter (``ULTIMAT3_JOBS["LIMITS"]``), read BEFORE the
claim, so the claim never takes what the limiter would have to give back.

Each number caps what one worker process claims: ``IN_FLIGHT`` attempts in all, ``PER_QUEUE``
per queue (a queue at its cap is left out of the claim, and the claim takes no more than the
fullest queue left has room for), ``PER_TENANT`` per tenant (the claim takes no more than the
busiest tenant has room for: it cannot choose by tenant, so it stays on the safe side), and
``RATE`` claims per second with ``BURST`` at once (a token bucket; ``BURST`` defaults to the
rate, at least 1). ``None`` does not limit; 0 is a hard stop. A job never claimed adds nothing
to any counter.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ultimat3_jobs.records import ProcessLimits
from ultimat3_jobs.runtime.worker.attempt import Attempt


@dataclass(frozen=True, slots=True)
class ClaimPlan:
    """What the next claim may take: up to ``limit`` jobs from ``queues``. ``retry_in``: when
    the rate binds, the seconds until it lets one more job be claimed than this claim spends
    (the loop looks again then, slots free or not); ``None`` otherwise."""

    limit: int
    queues: tuple[str, ...]
    retry_in: float | None = None


class ProcessLimiter:
    """Plans each claim by the process's limits; see the module's rules."""

    def __init__(
        self, limits: ProcessLimits, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits
        self._clock = clock
        rate = limits.rate
        self._burst = (
            float(limits.burst) if limits.burst is not None else (max(1.0, rate) if rate else 0.0)
        )
        self._tokens = self._burst
        self._refilled = self._clock()
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        return any(
            value is not None
            for value in (
                self.limits.in_flight,
                self.limits.per_queue,
                self.limits.per_tenant,
                self.limits.rate,
            )
        )

    def plan(self, queues: Sequence[str], free: int, running: Sequence[Attempt]) -> ClaimPlan:
        """The next claim's plan for ``free`` slots, ``running`` attempts in this process."""
        limits = self.limits
        limit = free
        chosen = tuple(queues)
        if limits.in_flight is not None:
            limit = min(limit, limits.in_flight - len(running))
        if limits.per_queue is not None:
            per_queue = Counter(a.job.queue for a in running)
            rooms = {q: limits.per_queue - per_queue[q] for q in chosen}
            chosen = tuple(q for q in chosen if rooms[q] > 0)
            limit = min([limit, *(rooms[q] for q in chosen)]) if chosen else 0
        if limits.per_tenant is not None:
            per_tenant = Counter(a.job.tenant_id for a in running)
            busiest = max(per_tenant.values(), default=0)
            limit = min(limit, limits.per_tenant - busiest)
        retry_in = None
        if limits.rate is not None:
            tokens = self._refill()
            whole = math.floor(tokens)
            if whole <= limit and limits.rate > 0:  # the rate binds: look again at the next token
                retry_in = (whole + 1 - tokens) / limits.rate
            limit = min(limit, whole)
        return ClaimPlan(limit=max(0, limit), queues=chosen, retry_in=retry_in)

    def took(self, count: int) -> None:
        """The claim took ``count`` jobs: each spends one token of the rate."""
        if self.limits.rate is None or count <= 0:
            return
        with self._lock:
            self._tokens = max(0.0, self._tokens - count)

    def _refill(self) -> float:
        rate = float(self.limits.rate or 0.0)
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._refilled) * rate)
            self._refilled = now
            return self._tokens
