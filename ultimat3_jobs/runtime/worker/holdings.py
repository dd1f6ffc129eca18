"""``Holdings``: the concurrency slots this worker's own runs hold, per lease key, as the lease
gate took them and the settler frees them.

A slot is one row of the lease store. The store names its *owner*, the run granted it; its
*user* is the run whose body runs on it now. They are the same run until the owner's body ends
and the slot is lent (``lend.py``): the worker starts its next run of the key on the slot at
once, in memory, and the settle that records the owner passes the row to that user in the same
statement. A run that ended on a lent slot rode it: the row never named it, and its own settle
frees nothing.

A run holds its slot from its grant until its settle lands: its body may have ended long
before that, while the batched settle is still on its way. The gate reads these counts to
decide, without a statement, that a run of a key must wait in the worker for its own finished
runs' settles (``parked``) rather than go back to the queue:

* a worker never holds more slots of one key than it has body slots (nor than the key's
  limit): a run that would take one more waits for a finished run of its own to settle;
* a key the store answered full while some of this worker's finished runs still held it waits
  the same way, until one of those settles (a freed slot of the key clears the mark);
* where slots are lent, a run of a key whose slots the worker holds as many of as it may, all
  in use, waits for one of them to be lent as its body ends, when bodies are short.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass

# A run is ``R``: the worker's one object for it, its ``Attempt``, hashed by identity without a
# Python call (a pair of its job id and claim token, two ``uuid.UUID`` hashed in Python, cost a
# capped job's worker about 35 such calls per run).


@dataclass(eq=False, slots=True)
class Slot[R: Hashable]:
    """One row of the store this worker's runs hold: ``owner``, the run the row names;
    ``user``, the run on it now; ``ended``: the user's body ended; ``handed``: a settle passed
    the row to a run that holds it as a slot of its own (:meth:`Holdings.passed`); ``closing``:
    the owner's settle, on its way, frees or hands the row on: it is lent no more; ``lent``:
    another run used it since its owner took it; ``held``: whether the owner's settle found
    the row (``None`` until it is written): the runs it was lent to held a slot only if so."""

    key: str
    owner: R
    user: R
    ended: bool = False
    handed: bool = False
    closing: bool = False
    lent: bool = False
    held: bool | None = None


class Holdings[R: Hashable]:
    """Per key: the slots this worker's runs hold, and how many of them wait for a settle
    with their user's body ended, keyed by run (``R``, hashed by identity). The lookups every
    run makes answer at once while no run holds a slot (jobs without limits)."""

    def __init__(self) -> None:
        self._slots: dict[R, Slot[R]] = {}
        self._held: dict[str, int] = {}
        self._settling: dict[str, int] = {}
        self._full: set[str] = set()
        self._idle: dict[str, dict[Slot[R], None]] = {}  # per key, its slots whose user ended
        self.freed = 0
        """How many slots this worker's runs let go so far."""
        self.total = 0
        """How many slots this worker's runs hold now."""
        self.ending = 0
        """How many of those wait for a settle with their user's body ended."""
        self.lends: Callable[[], bool] = _never
        """Whether a run whose key the worker holds as many slots of as it may waits for one
        of them to be lent (``handoff.py``: the driver hands slots on and bodies are short)."""
        self._lock = threading.Lock()

    def none_held(self) -> bool:
        """Whether no run holds or rides a slot (a snapshot, read without the lock)."""
        return not self._slots

    def took(self, run: R, key: str) -> None:
        """``run`` was granted a slot of ``key``."""
        with self._lock:
            if run in self._slots:
                return
            self._slots[run] = Slot(key, run, run)
            self._held[key] = self._held.get(key, 0) + 1
            self.total += 1

    def key_of(self, run: R) -> str | None:
        """The key of the slot ``run`` holds or runs on, or ``None``."""
        with self._lock:
            slot = self._slots.get(run)
            return None if slot is None else slot.key

    def ended(self, run: R) -> None:
        """The run's body ended: its slot is freed (or lent) by its settle, on its way."""
        if not self._slots:
            return
        with self._lock:
            slot = self._slots.get(run)
            if slot is None or slot.user != run or slot.ended:
                return
            self._end(slot)

    def lendable(self, run: R) -> Slot[R] | None:
        """The slot ``run`` ended on, when it can be lent (its body ended on it)."""
        if not self._slots:
            return None
        with self._lock:
            slot = self._slots.get(run)
            if slot is None or slot.user != run or not slot.ended or slot.handed:
                return None
            return None if slot.closing else slot

    def lend(self, slot: Slot[R], run: R, to: R) -> bool:
        """The slot that ``run`` ended on is used by the run ``to`` now; False when it is no
        longer ``run``'s to lend."""
        with self._lock:
            if self._slots.get(run) is not slot or slot.user != run or not slot.ended:
                return False
            if slot.closing or slot.handed:
                return False
            slot.user = to
            slot.lent = True
            self._unend(slot)
            self._slots[to] = slot
            if run != slot.owner:
                del self._slots[run]  # it rode the slot: the row never named it
            return True

    def rider(self, run: R) -> R | None:
        """The run on the slot whose row names ``run``, when that is another run."""
        with self._lock:
            slot = self._slots.get(run)
            if slot is None or slot.owner != run or slot.user == run or slot.handed:
                return None
            return slot.user

    def close(self, run: R) -> str | None:
        """The settle of ``run`` is being written: when the store's row names it and nobody
        runs on its slot, the slot is lent no more (the settle frees the row or hands it to a
        run offered it). Answers the slot's key then, else ``None``."""
        with self._lock:
            slot = self._slots.get(run)
            if slot is None or slot.owner != run or slot.handed or not slot.ended:
                return None
            slot.closing = True
            return slot.key

    def owned(self, run: R) -> Slot[R] | None:
        """The slot whose store row names ``run`` (its settle frees or passes the row), or
        ``None``: one look-up where a settle reads the slot's rider and whether it was lent."""
        if not self._slots:
            return None
        with self._lock:
            slot = self._slots.get(run)
            if slot is None or slot.owner != run or slot.handed:
                return None
            return slot

    def owns(self, run: R) -> bool:
        """Whether the store's row names ``run`` (its settle frees or passes the row)."""
        return self.owned(run) is not None

    def ended_on(self, run: R) -> bool:
        """Whether ``run``'s body ended on a slot that nobody runs on since."""
        if not self._slots:
            return False
        with self._lock:
            slot = self._slots.get(run)
            return slot is not None and slot.user == run and slot.ended

    def moved(self, owner: R, rider: R) -> None:
        """A settle passed the row named ``owner`` to ``rider``, which owns it now. The slot
        may have been lent on by ``rider`` meanwhile: its own settle passes the row on."""
        with self._lock:
            slot = self._slots.get(owner)
            if slot is not None and slot.owner == owner:
                slot.owner = rider
                slot.held = None  # the row names the rider now: its own settle tells
                self._slots[rider] = slot

    def passed(self, runs: list[R]) -> None:
        """The settle of ``runs`` handed their slots to next runs, which hold them
        as their own: their :meth:`gone` frees nothing."""
        with self._lock:
            for run in runs:
                slot = self._slots.get(run)
                if slot is not None and slot.owner == run:
                    slot.handed = True

    def gone(self, run: R) -> str | None:
        """The run is over (settled, abandoned, lost): the key of the slot it freed, or
        ``None`` when it freed none (it held none, handed its row on, or rode one)."""
        if not self._slots:
            return None
        with self._lock:
            slot = self._slots.pop(run, None)
            if slot is None:
                return None
            if slot.owner != run and not slot.handed:
                if slot.user == run:  # gone before the row's owner settled: the slot waits
                    slot.user = slot.owner
                    if not slot.ended:
                        self._end(slot)
                return None
            if slot.user != run:
                self._slots.pop(slot.user, None)  # its rider rides no row now
            self._held[slot.key] -= 1
            self.total -= 1
            if not self._held[slot.key]:
                del self._held[slot.key]
            if slot.ended:
                self._unend(slot)
            if slot.handed:
                return None
            self._full.discard(slot.key)
            self.freed += 1
            return slot.key

    def _end(self, slot: Slot[R]) -> None:
        slot.ended = True
        self._settling[slot.key] = self._settling.get(slot.key, 0) + 1
        self._idle.setdefault(slot.key, {})[slot] = None
        self.ending += 1

    def _unend(self, slot: Slot[R]) -> None:
        slot.ended = False
        self.ending -= 1
        self._settling[slot.key] -= 1
        if not self._settling[slot.key]:
            del self._settling[slot.key]
        idle = self._idle[slot.key]
        del idle[slot]
        if not idle:
            del self._idle[slot.key]

    def idle(self, key: str) -> Slot[R] | None:
        """A slot of ``key`` whose user's body ended and that can be lent, or ``None``."""
        with self._lock:
            for slot in self._idle.get(key, ()):
                if not slot.handed and not slot.closing:
                    return slot
            return None

    def full(self, key: str) -> None:
        """The store answered ``key`` full while some of this worker's ended runs hold it."""
        with self._lock:
            self._full.add(key)

    def settling(self, key: str) -> int:
        """How many slots of ``key`` wait for a settle with their user's body ended."""
        with self._lock:
            return self._settling.get(key, 0)

    def waits(self, key: str, bound: int) -> bool:
        """Whether a run of ``key`` waits for this worker's own settles, no statement asked:
        some ended runs of the key still hold slots, and either the worker holds ``bound``
        slots of it already or the store answered it full since; or the worker holds ``bound``
        slots of it in use and lends them on as their bodies end (:attr:`lends`)."""
        with self._lock:
            held = self._held.get(key, 0)
            if not self._settling.get(key):
                return held > 0 and held >= bound and self.lends()
            return key in self._full or held >= bound


def _never() -> bool:
    return False
