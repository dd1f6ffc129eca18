"""Claim-ahead: attempts claimed before a slot is free for them, started as slots free up.

A worker that claims only when a slot frees pays a round trip per few jobs, and its slots stand
empty while the claim runs. So the loop also claims the next batch while the current one runs,
and a slot that frees starts the next claimed attempt at once, on the thread that freed it.

How far ahead it claims is bounded twice. Never more than one batch (the worker's slots) beyond
its free slots. And never more than its slots run in ``AHEAD_HORIZON_SECONDS``, judged from how
long bodies took so far: an attempt claimed ahead waits for a slot with its lease running (the
heartbeat renews it like any other), and one that waited past ``PENDING_MARK_AFTER_SECONDS``
costs a statement to mark and one to clear. Until a body has ended, and for bodies that run for
seconds, nothing is claimed ahead.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping

from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.runtime.worker.inflight import ClaimInFlight

AHEAD_HORIZON_SECONDS = 0.2
"""Claim ahead no more than the slots would start in this long (well under the 0.5 s after which
maintenance marks a waiting attempt pending)."""
BATCH_MIN = 64
"""A batch claimed ahead holds at least this many jobs, however few the slots: a worker whose
bodies are short is bound by its round trips (claim, ack), not by its slots."""
DURATION_WEIGHT = 0.1
"""The weight of the latest body duration in the running mean."""


class ClaimAhead:
    """The attempts claimed ahead, in claim order, and how many more to claim."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self.batch = max(concurrency, BATCH_MIN)
        self.settle_backlog = 2 * self.batch
        """Attempts waiting for their ack past which nothing more is claimed (the settler is
        behind)."""
        self._waiting: deque[Attempt] = deque()
        self._parked: list[Attempt] = []
        self._lock = threading.Lock()
        self._mean_duration: float | None = None
        self.held_back = False
        """The loop's last look found the settler behind: it claims once a settle lands."""
        self.claiming = ClaimInFlight()
        """Marked by the claim loop while its claim is on its way (``inflight.py``)."""

    def __len__(self) -> int:
        """The attempts waiting for a slot, parked ones too."""
        return len(self._waiting) + len(self._parked)

    def behind(self, held: int) -> bool:
        """Whether the settler lags: of the ``held`` attempts, at least ``settle_backlog`` wait
        for their ack (:attr:`held_back`: the loop claims once a settle lands); never while
        the settler asked for a claim (``inflight.py``)."""
        self.held_back = held - len(self._waiting) - len(self._parked) >= self.settle_backlog
        return self.held_back and not self.claiming.asked

    def parked(self) -> int:
        """How many attempts are parked."""
        return len(self._parked)

    def body_took(self, seconds: float) -> None:
        """A body ran for ``seconds``: fold it into the running mean."""
        mean = self._mean_duration
        self._mean_duration = seconds if mean is None else mean + DURATION_WEIGHT * (seconds - mean)

    def short(self, seconds: float) -> bool:
        """Whether bodies took under ``seconds`` on average so far (``False`` before one ended)."""
        mean = self._mean_duration
        return mean is not None and mean < seconds

    def target(self) -> int:
        """How many attempts to hold ahead: up to one batch, as many as the slots start within
        the horizon at the mean body duration; none before a body has ended."""
        mean = self._mean_duration
        if mean is None:
            return 0
        if mean <= 0:
            return self.batch
        return min(self.batch, int(AHEAD_HORIZON_SECONDS * self.concurrency / mean))

    def wanted(self, free: int, held: int = 0) -> int:
        """How many to claim now, given ``free`` slots not filled from the waiting attempts:
        nothing while at least half the target still waits (so a claim takes a batch, not one
        row per freed slot), else the free slots plus the target less what waits. ``held``:
        the lease slots held by the worker's runs whose bodies ended, each handed to a waiting
        run as its settle lands (``handoff.py``), so as many more wait beyond the target."""
        target = self.target()
        target += held if target else 0
        waiting = len(self._waiting) + len(self._parked)  # ``len(self)``, without its call
        if free <= 0 and waiting * 2 >= target:
            return 0
        return max(0, free + target - waiting)

    def add(self, attempts: list[Attempt]) -> None:
        """``attempts`` at the end of the line, in order (a claim's, in one lock round)."""
        with self._lock:
            self._waiting.extend(attempts)

    def take(self) -> Attempt | None:
        """The oldest waiting attempt, or ``None``."""
        with self._lock:
            return self._waiting.popleft() if self._waiting else None

    def take_many(self, count: int, *, limited: bool = True) -> list[Attempt]:
        """Up to ``count`` of the oldest waiting attempts; without ``limited``, none from the
        first whose job declares a limit (its leases are taken by the claim loop's thread)."""
        if count <= 0:  # no slot: the loop's pass after each ending mostly asks for none
            return []
        taken: list[Attempt] = []
        with self._lock:
            while self._waiting and len(taken) < count:
                definition = self._waiting[0].definition
                if not limited and definition is not None and definition.limited:
                    break
                taken.append(self._waiting.popleft())
        return taken

    def take_keyed(
        self, wanted: Mapping[str, int], count: int, *, key_of: Callable[[Attempt], str | None]
    ) -> list[Attempt]:
        """Up to ``count`` waiting attempts, parked ones first, then in line order, of at most
        ``wanted[key]`` per key by ``key_of``; the others keep their places."""
        left = dict(wanted)
        taken: list[Attempt] = []
        with self._lock:
            for line in (self._parked, self._waiting):
                kept: list[Attempt] = []
                for attempt in line:
                    key = key_of(attempt) if len(taken) < count else None
                    if key is not None and left.get(key, 0) > 0:
                        left[key] -= 1
                        taken.append(attempt)
                    else:
                        kept.append(attempt)
                if len(kept) != len(line):
                    line.clear()
                    line.extend(kept)
        return taken

    def take_first(self, key: str, *, key_of: Callable[[Attempt], str | None]) -> Attempt | None:
        """The first waiting attempt of ``key`` by ``key_of``, parked ones first; ``None``
        when none waits. The line ahead of it keeps its places."""
        with self._lock:
            for line in (self._parked, self._waiting):
                for i, attempt in enumerate(line):
                    if key_of(attempt) == key:
                        del line[i]
                        return attempt
        return None

    def put_back(self, attempts: list[Attempt]) -> None:
        """``attempts`` back at the head of the line, in order."""
        with self._lock:
            self._waiting.extendleft(reversed(attempts))

    def park(self, attempt: Attempt) -> None:
        """An attempt that waits aside, out of the line, until :meth:`unpark` (its lease key is
        held by this worker's own runs whose settle is on its way)."""
        with self._lock:
            self._parked.append(attempt)

    def unpark(self) -> bool:
        """Every parked attempt back at the head of the line, in the order parked; answers
        whether there was one."""
        with self._lock:
            parked, self._parked = self._parked, []
            self._waiting.extendleft(reversed(parked))
            return bool(parked)

    def drain(self) -> list[Attempt]:
        """Every waiting attempt, parked ones too, now out of this queue (the worker is
        stopping: the loop claims no more, :meth:`ClaimInFlight.close`)."""
        self.claiming.close()
        with self._lock:
            waiting = [*self._parked, *self._waiting]
            self._waiting.clear()
            self._parked.clear()
            return waiting
