"""``HeldBack``: endings a flush leaves for the claim after it, so their slots' rows pass on.

A flush that waited for the claim on its way (``handoff.py``) finds, as it goes on, endings
that came meanwhile: mostly the claim's own runs, lent the flush's slots, whose short bodies
ended at once. Taken in, their settles would free those rows (nobody runs on them) for the next
claim's runs to take again with ``lease_acquire_many``. Held back instead, the flush writes
their owners' settles, which pass the rows to them, and they wait, out of the settler's queue,
for the next claim to land (:meth:`HeldBack.landed`, told by ``ClaimInFlight.end``), whose runs
are lent their slots, or for :data:`~ultimat3_jobs.runtime.worker.handoff.CLAIM_WAIT_SECONDS`
at most; a stop lets them go at once. The settler is woken for them by a marker in its queue,
never by a poll, and writes every other ending meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ultimat3_jobs.runtime.worker.attempt import Outcome
from ultimat3_jobs.runtime.worker.handoff import CLAIM_WAIT_SECONDS
from ultimat3_jobs.runtime.worker.inflight import ClaimInFlight


class HeldBack:
    """The endings held for the next claim (the settler's thread alone holds and lets them
    go). ``wake``: puts the marker that wakes the settler in its queue."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._held: list[Outcome] = []
        self._until = 0.0
        self._answered = 0

    def __bool__(self) -> bool:
        return bool(self._held)

    def hold(self, outcomes: list[Outcome], claiming: ClaimInFlight) -> None:
        """Hold ``outcomes`` until the claim after the one that just landed lands."""
        if not outcomes:
            return
        if not self._held:
            self._until = time.monotonic() + CLAIM_WAIT_SECONDS
            self._answered = claiming.answered
        self._held.extend(outcomes)

    def timeout(self) -> float | None:
        """How long the settler may wait for its next ending: until the held ones are due."""
        if not self._held:
            return None
        return max(0.0, self._until - time.monotonic())

    def due(self, claiming: ClaimInFlight, stopping: bool) -> list[Outcome]:
        """The held endings, let go, once a claim landed since, their time is up or the
        worker stops; else none."""
        if not self._held:
            return []
        landed = claiming.answered > self._answered
        if not (stopping or landed) and time.monotonic() < self._until:
            return []
        held, self._held = self._held, []
        return held

    def landed(self) -> None:
        """A claim landed (the claim loop's thread): wake the settler when it holds endings."""
        if self._held:
            self._wake()
