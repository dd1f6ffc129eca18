"""``HandOffs``: a concurrency slot passed from a run whose body ended to the worker's next run
of its key, without a statement of its own.

**Lent at once.** As a body ends (:meth:`HandOffs.lend`), the worker's next waiting run of the
slot's key starts on that slot, in memory: the store's row still names the ended run, which is
``running`` in the store until its batched settle lands, and the heartbeat keeps renewing the
row with that run's lease. The settle that records the ended run passes the row to the run
riding it, in the same statement (``job_settle_handoff``), without stamping the rider's start
(no x_jobs write for it there): every run that rode a lent slot is stamped started at the
moment its own settle lands (``relayed``). A slot
is lent only while the row's lease is comfortably unexpired by the worker's own bookkeeping
(half the lease at least, :data:`LEND_MARGIN`), so the settle lands long before anyone else
could take the row; a settle that does not pass the row (the owner's lease was lost meanwhile)
stops the rider as a lost attempt. A crash at any point leaves each row with one run, the owner
or the rider, whose lease frees it.

**Offered to waiting runs.** A slot whose body ended with no run of its key waiting is freed by
its settle, or offered to the runs claimed since: before each flush the settler asks
:meth:`HandOffs.offer` for as many waiting runs of each key as the flush frees rows of it, each
given a body slot now. The store answers which it granted; :meth:`HandOffs.handed` starts those
and puts the others back at the head of the line, where the claim loop takes their leases as
before. A hand-off changes a row's holder in one statement, so a key never holds more rows than
before.

**Held for the claim on its way.** Short bodies use up the runs claimed ahead before the next
claim lands; their slots would then be freed by their flush, and the runs that claim brings
would take the same rows again with ``lease_acquire_many``. So a flush that would free a slot
nobody was lent, with no run waiting in the worker, waits for the claim loop's claim on its
way to land (at most :data:`CLAIM_WAIT_SECONDS`): its runs are lent those slots
(:meth:`HandOffs.lend_to`) and the flush passes the rows to them. The endings that came during
the wait on slots nobody runs on wait in turn for the next claim (``heldback.py``).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ultimat3_jobs.drivers.base import JobDriver, LeaseRequest, LeaseRun
from ultimat3_jobs.errors import ConcurrencyKeyInvalid
from ultimat3_jobs.runtime.worker.ahead import ClaimAhead
from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.runtime.worker.holdings import Holdings, Slot

logger = logging.getLogger("ultimat3_jobs.worker")

LEND_WAIT_SECONDS = 1.0
"""Runs wait in the worker for a slot of its own to be lent only while bodies took less than
this on average: behind longer bodies they go back to the queue, where another worker's free
slot of the key may serve them sooner."""
LEND_MARGIN = 0.5
"""A slot is lent only while its row's lease has this share of ``lease_seconds`` left at least,
by the worker's own bookkeeping (the moment before the claim or heartbeat that renewed it)."""
CLAIM_WAIT_SECONDS = 0.1
"""The longest a flush that would free slots nobody was lent waits for the claim on its way."""


def handoff_request(attempt: Attempt) -> LeaseRequest | None:
    """The one concurrency slot the attempt's run asks, when that is all it asks (no rate,
    a key its function answers); else ``None``. Worked out once per attempt."""
    if attempt.handoff_asked is not None:
        return attempt.handoff_asked or None
    definition = attempt.definition
    asked: LeaseRequest | None = None
    if definition is not None and definition.limited and definition.rate is None:
        try:
            requests = definition.leases_for(attempt.job.input)  # no rate: its cap alone
        except ConcurrencyKeyInvalid:
            requests = []  # the gate fails it when it asks
        if len(requests) == 1:
            asked = requests[0]
    attempt.handoff_asked = asked or False
    return asked


class Gate(Protocol):
    """The lease gate (``limits.py``) as a hand-off sees it."""

    holdings: Holdings[Attempt]
    lend: Callable[[Attempt], bool] | None
    asking: Callable[[], None]

    def granted(self, attempt: Attempt, key: str | None) -> None:
        """The run holds its leases now."""


@dataclass(slots=True)
class Offer:
    """What one flush offers: ``riders``, runs on lent slots whose rows its settle passes to
    them (``owner_of``: each rider to the run its row names); ``waiting``, runs given rows the
    flush frees."""

    riders: list[Attempt] = field(default_factory=list)
    owner_of: dict[Attempt, Attempt] = field(default_factory=dict)
    waiting: list[Attempt] = field(default_factory=list)
    lent: dict[Attempt, Slot[Attempt]] = field(default_factory=dict)
    """The settling runs whose slots were lent: the write tells whether each row was there."""

    @property
    def written(self) -> bool:
        """Whether the flush's write must be ``job_settle_handoff``: it offers runs, or must
        tell whether lent slots' rows were there."""
        return bool(self.riders or self.waiting or self.lent)

    def found(self, held: set[uuid.UUID]) -> None:
        """The write found the rows of the ``held`` settled runs: each lent slot learns
        whether its row was there."""
        for run, slot in self.lent.items():
            slot.held = run.job.id in held

    @property
    def attempts(self) -> list[Attempt]:
        """Every run offered, riders first (they take the rows of their key first)."""
        return [*self.riders, *self.waiting]

    def part(self, owners: set[Attempt]) -> Offer:
        """The riders of the rows that ``owners`` hold, alone."""
        riders = [a for a in self.riders if self.owner_of[a] in owners]
        lent = {run: slot for run, slot in self.lent.items() if run in owners}
        return Offer(riders, {a: self.owner_of[a] for a in riders}, lent=lent)

    def without(self, owners: set[Attempt]) -> Offer:
        """This offer less the riders of the rows that ``owners`` hold."""
        riders = [a for a in self.riders if self.owner_of[a] not in owners]
        owner_of = {a: self.owner_of[a] for a in riders}
        lent = {run: slot for run, slot in self.lent.items() if run not in owners}
        return Offer(riders, owner_of, self.waiting, lent)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSide:
    """What a hand-off asks of its worker: ``reserve(n)`` takes up to ``n`` body slots and
    answers how many (negative ``n`` gives them back); ``start`` runs a granted attempt in one;
    ``wake`` tells the claim loop that runs are back in line; ``find`` answers the worker's
    attempt of a :attr:`~Attempt.running_key`, while it holds one."""

    reserve: Callable[[int], int]
    start: Callable[[Attempt], None]
    wake: Callable[[], None]
    find: Callable[[int], Attempt | None]


class HandOffs:
    """The worker's side of ``job_settle_handoff``. ``gate``: the slots the worker's runs
    hold, where a grant is recorded; ``worker``: its body slots and attempts; ``lease_seconds``:
    the lease of a run whose job declares none."""

    def __init__(
        self,
        *,
        driver: JobDriver,
        gate: Gate,
        ahead: ClaimAhead,
        worker: WorkerSide,
        lease_seconds: float,
    ) -> None:
        self._driver = driver
        self._holdings = gate.holdings
        self._granted = gate.granted
        self._ahead = ahead
        self._worker = worker
        self._lease_seconds = lease_seconds
        self.claiming = ahead.claiming
        """The claim loop's claim on its way, which a flush waits for (:meth:`await_claim`)."""
        self.none_held = self._holdings.none_held
        """Whether no run holds a lease slot (always, in a worker whose jobs declare no
        limit): nothing to lend, hold or offer."""
        if driver.hands_off_slots:
            self._holdings.lends = self._lends
            gate.lend = self.lend_to
            gate.asking = ahead.claiming.end  # the claim's runs were lent what they could be

    def _lends(self) -> bool:
        return self._ahead.short(LEND_WAIT_SECONDS)

    def lend(self, attempt: Attempt) -> bool:
        """The body of ``attempt`` ended on a slot: start the next waiting run of its key on
        it now, when the row's lease is comfortably unexpired and a body slot is free. Answers
        whether one started."""
        if not self._driver.hands_off_slots:
            return False
        slot = self._holdings.lendable(attempt)
        if slot is None or not self._fresh(slot):
            return False
        if not self._worker.reserve(1):
            return False
        taken = self._ahead.take_first(slot.key, key_of=_key_of)
        if taken is not None:
            if self._ride(slot, attempt, taken):
                self._worker.start(taken)
                return True
            self._ahead.put_back([taken])
        self._worker.reserve(-1)
        return False

    def lend_to(self, attempt: Attempt) -> bool:
        """Lend ``attempt``, given a body slot, a slot of its key whose run's body ended (the
        gate asks before it asks the store). Answers whether it holds one now."""
        asked = handoff_request(attempt)
        slot = None if asked is None else self._holdings.idle(asked.key)
        if slot is None or not self._fresh(slot):
            return False
        return self._ride(slot, slot.user, attempt)

    def _ride(self, slot: Slot[Attempt], run: Attempt, attempt: Attempt) -> bool:
        """``attempt`` uses the slot ``run`` ended on, granted; False when the slot
        is no longer ``run``'s to lend."""
        if not self._holdings.lend(slot, run, attempt):
            return False
        attempt.riding = True
        attempt.lent = slot
        self._granted(attempt, None)
        return True

    def _fresh(self, slot: Slot[Attempt]) -> bool:
        """Whether the lease of the run the slot's row names is comfortably unexpired."""
        owner = slot.owner
        if owner.lost or self._worker.find(owner.running_key) is not owner:
            return False
        declared = owner.definition.lease_seconds if owner.definition is not None else None
        lease = declared or self._lease_seconds  # as the claim and the heartbeat lease it
        return time.monotonic() < owner.lease_from + lease * LEND_MARGIN

    def offer(self, settling: Sequence[Attempt]) -> Offer:
        """What the flush of ``settling`` offers: the riders of the rows they hold (not settled
        in the same flush), and waiting runs for the rows it frees, each with a body slot taken
        for it; nothing when the driver cannot hand off."""
        offer = Offer()
        holdings = self._holdings
        if not self._driver.hands_off_slots or holdings.none_held():
            return offer
        find = self._worker.find
        runs = set(settling)
        freeing: Counter[str] = Counter()
        for run in runs:
            slot = holdings.owned(run)
            if slot is None:
                continue
            if slot.lent:  # another run used it since: the write tells whether it was held
                offer.lent[run] = slot
            rider = slot.user  # the run on it, when that is another run
            if rider is not run and rider not in runs and find(rider.running_key) is rider:
                offer.riders.append(rider)
                offer.owner_of[rider] = run
                continue
            key = holdings.close(run)  # lent no more: this settle frees or hands it on
            if key is not None:
                freeing[key] += 1
        if not freeing:
            return offer
        room = self._worker.reserve(sum(freeing.values()))
        if not room:
            return offer
        offer.waiting = self._ahead.take_keyed(freeing, room, key_of=_key_of)
        if len(offer.waiting) < room:
            self._worker.reserve(len(offer.waiting) - room)
        return offer

    def await_claim(self, settling: Sequence[Attempt]) -> bool:
        """Before a flush of ``settling``: when one of them ended on a slot that nobody runs
        on, no run waits in the worker (the flush offers the slot to those) and a claim is on
        its way, or would come once this settle lands (the last claim took all it asked and
        the loop waits for the settler: one is asked of it now), wait for it to land (at most
        :data:`CLAIM_WAIT_SECONDS`), so its runs are lent the slot. Answers whether it
        waited."""
        claiming = self._ahead.claiming
        if len(self._ahead) or not self._driver.hands_off_slots:
            return False
        asking = not claiming.flying and claiming.more and self._ahead.held_back
        if not (claiming.flying or asking):
            return False
        if self._holdings.none_held():  # no run holds a slot: none of them ended on one
            return False
        if not any(self.holds(attempt) for attempt in settling):
            return False
        if asking:  # the loop waits for this settle to claim: ask it to claim first
            claiming.ask()
            self._worker.wake()
        return claiming.wait(CLAIM_WAIT_SECONDS)

    def holds(self, attempt: Attempt) -> bool:
        """Whether the attempt's body ended on a slot nobody runs on since (its settle frees
        or hands the slot on)."""
        return self._holdings.ended_on(attempt)

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
                relayed=attempt.riding,
            )
            for attempt in offered
        ]

    def handed(self, settling: Sequence[Attempt], offer: Offer, granted: set[uuid.UUID]) -> None:
        """The store granted ``granted`` of ``offer``'s runs the rows of ``settling``: the
        riders granted own their rows now, a rider not granted rides no row and stops as a
        lost attempt; the waiting runs granted start (as many settled rows passed on, not
        freed), the others go back in line."""
        for rider in offer.riders:
            if rider.job.id in granted:
                self._holdings.moved(offer.owner_of[rider], rider)
                rider.riding = False
                rider.relayed = True  # its settle stamps its start: the hand-off did not
                rider.lent = None
            else:
                logger.warning(
                    "jobs.lease.lent_lost: %s %s ran on a lent slot its owner's settle did not "
                    "pass on; stopping it",
                    rider.job.name,
                    rider.job.id,
                )
                rider.lose()
        back: list[Attempt] = []
        passing: Counter[str] = Counter()
        for attempt in offer.waiting:
            if attempt.job.id in granted:
                key = _request(attempt).key
                passing[key] += 1
                self._granted(attempt, key)
                self._worker.start(attempt)
            else:
                back.append(attempt)
        owners = set(offer.owner_of.values())
        passed: list[Attempt] = []
        for attempt in settling:
            slot = self._holdings.owned(attempt) if passing else None
            if slot is not None and attempt not in owners and passing[slot.key] > 0:
                passing[slot.key] -= 1
                passed.append(attempt)
        self._holdings.passed(passed)
        if back:
            self._worker.reserve(-len(back))
            self._ahead.put_back(back)
            self._worker.wake()


def lent_by(attempt: Attempt) -> uuid.UUID | None:
    """For the ending of a run on a lent slot: the job whose row that slot is, when no settle
    has shown the row held yet (the ending lands only while that row is there; a settle that
    found it gone leaves it to the rescuer); else ``None``."""
    slot = attempt.lent
    if slot is None or not attempt.riding or slot.held:
        return None
    return slot.owner.job.id


def _key_of(attempt: Attempt) -> str | None:
    asked = handoff_request(attempt)
    return None if asked is None else asked.key


def _request(attempt: Attempt) -> LeaseRequest:
    asked = handoff_request(attempt)
    assert asked is not None  # only such attempts are offered
    return asked
