"""``HandOffs``: a settled run's concurrency slot passed to the worker's next run of its key in
the settle's own statement (``job_settle_handoff``), instead of freed there and taken again by
a ``lease_acquire_many`` once the settle landed.

A worker whose runs of a capped key end faster than their batched settle lands holds the key's
slots with finished runs, and its next runs of the key wait for those settles. Before each
flush the settler asks :meth:`HandOffs.offer` for them: as many waiting runs of each key as the
flush settles runs holding a slot of it, each asking one concurrency slot, each given a body
slot now. The store answers which it granted; :meth:`HandOffs.handed` starts those and puts the
others back at the head of the line, where the claim loop takes their leases as before. The
hand-off changes a slot's holder in one statement, so a key never holds more slots than
before, and a crash before or after it leaves each slot with one run whose lease frees it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

from ultimat3_jobs.drivers.base import JobDriver, LeaseRequest, LeaseRun
from ultimat3_jobs.errors import ConcurrencyKeyInvalid
from ultimat3_jobs.model.limits import lease_requests
from ultimat3_jobs.runtime.worker.ahead import ClaimAhead
from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.runtime.worker.holdings import Holdings


def handoff_request(attempt: Attempt) -> LeaseRequest | None:
    """The one concurrency slot the attempt's run asks, when that is all it asks (no rate,
    a key its function answers); else ``None``. Worked out once per attempt."""
    if attempt.handoff_asked is not None:
        return attempt.handoff_asked or None
    definition = attempt.definition
    asked: LeaseRequest | None = None
    if definition is not None and definition.limited and definition.rate is None:
        try:
            requests = lease_requests(
                definition.name, definition.concurrency, None, attempt.job.input
            )
        except ConcurrencyKeyInvalid:
            requests = []  # the gate fails it when it asks
        if len(requests) == 1:
            asked = requests[0]
    attempt.handoff_asked = asked or False
    return asked


class Gate(Protocol):
    """The lease gate (``limits.py``) as a hand-off sees it."""

    holdings: Holdings

    def granted(self, attempt: Attempt, key: str | None) -> None:
        """The run holds its leases now."""


class HandOffs:
    """The worker's side of ``job_settle_handoff``. ``gate``: the slots the worker's runs
    hold, where a grant is recorded; ``reserve(n)`` takes up to ``n`` body slots and answers
    how many (negative ``n`` gives them back); ``start`` runs a granted attempt in one;
    ``wake`` tells the claim loop that runs are back in line."""

    def __init__(
        self,
        *,
        driver: JobDriver,
        gate: Gate,
        ahead: ClaimAhead,
        reserve: Callable[[int], int],
        start: Callable[[Attempt], None],
        wake: Callable[[], None],
    ) -> None:
        self._driver = driver
        self._holdings = gate.holdings
        self._granted = gate.granted
        self._ahead = ahead
        self._reserve = reserve
        self._start = start
        self._wake = wake

    def offer(self, settling: Sequence[Attempt]) -> list[Attempt]:
        """The waiting runs to offer the slots that ``settling`` hold, each with a body slot
        taken for it; none when the driver cannot hand off."""
        if not self._driver.hands_off_slots:
            return []
        holdings = self._holdings
        freeing = Counter(
            key
            for attempt in settling
            if (key := holdings.key_of((attempt.job.id, attempt.job.claim_token))) is not None
        )
        if not freeing:
            return []
        room = self._reserve(sum(freeing.values()))
        if not room:
            return []
        offered = self._ahead.take_keyed(freeing, room, key_of=_key_of)
        if len(offered) < room:
            self._reserve(len(offered) - room)
        return offered

    def holds(self, attempt: Attempt) -> bool:
        """Whether the attempt's run holds a slot of this worker's (a hand-off can pass it)."""
        return self._holdings.key_of((attempt.job.id, attempt.job.claim_token)) is not None

    def all_in(self, holding: int) -> bool:
        """Whether a flush that gathered ``holding`` slot-holding endings has every slot this
        worker holds, with runs waiting for them: nothing more can join it, so it is written
        at once instead of after the flush interval."""
        return holding > 0 and holding >= self._holdings.total and len(self._ahead) > 0

    def runs(self, offered: Sequence[Attempt]) -> list[LeaseRun]:
        """The lease runs of ``offered``, in order."""
        return [
            LeaseRun(
                job_id=attempt.job.id,
                claim_token=attempt.job.claim_token,
                requests=[_request(attempt)],
            )
            for attempt in offered
        ]

    def handed(
        self, settling: Sequence[Attempt], offered: Sequence[Attempt], granted: set[uuid.UUID]
    ) -> None:
        """The store granted ``granted`` of ``offered`` the slots of ``settling``: start those
        (as many of the settled runs' slots passed on, not freed), give the rest back."""
        back: list[Attempt] = []
        passing: Counter[str] = Counter()
        for attempt in offered:
            if attempt.job.id in granted:
                key = _request(attempt).key
                passing[key] += 1
                self._granted(attempt, key)
                self._start(attempt)
            else:
                back.append(attempt)
        passed: list[tuple[uuid.UUID, uuid.UUID]] = []
        for attempt in settling:
            pair = (attempt.job.id, attempt.job.claim_token)
            key = self._holdings.key_of(pair)
            if key is not None and passing[key] > 0:
                passing[key] -= 1
                passed.append(pair)
        self._holdings.passed(passed)
        if back:
            self._reserve(-len(back))
            self._ahead.put_back(back)
            self._wake()


def _key_of(attempt: Attempt) -> str | None:
    asked = handoff_request(attempt)
    return None if asked is None else asked.key


def _request(attempt: Attempt) -> LeaseRequest:
    asked = handoff_request(attempt)
    assert asked is not None  # only such attempts are offered
    return asked
