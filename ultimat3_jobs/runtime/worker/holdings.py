"""``Holdings``: the concurrency slots this worker's own runs hold, per lease key, as the lease
gate took them and the settler frees them.

A run holds its slot from its grant (as its body takes a worker slot) until its settle lands:
its body may have ended long before that, while the batched settle is still on its way. The
gate reads these counts to decide, without a statement, that a run of a key must wait in the
worker for its own finished runs' settles (``parked``) rather than go back to the queue:

* a worker never holds more slots of one key than it has body slots (nor than the key's
  limit): a run that would take one more waits for a finished run of its own to settle;
* a key the store answered full while some of this worker's finished runs still held it waits
  the same way, until one of those settles (a freed slot of the key clears the mark).
"""

from __future__ import annotations

import threading
import uuid

Pair = tuple[uuid.UUID, uuid.UUID]
"""A run: its job id and claim token."""


class Holdings:
    """Per key: the slots this worker's runs hold, and how many of those runs have ended."""

    def __init__(self) -> None:
        self._key_of: dict[Pair, str] = {}
        self._ended: set[Pair] = set()
        self._held: dict[str, int] = {}
        self._settling: dict[str, int] = {}
        self._full: set[str] = set()
        self._passed: set[Pair] = set()
        self.freed = 0
        """How many slots this worker's runs let go so far."""
        self.total = 0
        """How many slots this worker's runs hold now."""
        self._lock = threading.Lock()

    def took(self, pair: Pair, key: str) -> None:
        """The run ``pair`` was granted a slot of ``key``."""
        with self._lock:
            if pair in self._key_of:
                return
            self._key_of[pair] = key
            self._held[key] = self._held.get(key, 0) + 1
            self.total += 1

    def key_of(self, pair: Pair) -> str | None:
        """The key the run ``pair`` holds a slot of, or ``None``."""
        with self._lock:
            return self._key_of.get(pair)

    def ended(self, pair: Pair) -> None:
        """The run's body ended: its slot is freed by its settle, which is on its way."""
        with self._lock:
            key = self._key_of.get(pair)
            if key is None or pair in self._ended:
                return
            self._ended.add(pair)
            self._settling[key] = self._settling.get(key, 0) + 1

    def passed(self, pairs: list[Pair]) -> None:
        """The settle of the runs ``pairs`` handed their slots to next runs: their
        :meth:`gone` frees nothing."""
        with self._lock:
            self._passed.update(pairs)

    def gone(self, pair: Pair) -> str | None:
        """The run's slot is no longer held (settled, abandoned, lost): the key it freed, or
        ``None`` when the run held none or handed its slot on."""
        with self._lock:
            key = self._key_of.pop(pair, None)
            if key is None:
                return None
            handed = pair in self._passed
            self._passed.discard(pair)
            self._held[key] -= 1
            self.total -= 1
            if not self._held[key]:
                del self._held[key]
            if pair in self._ended:
                self._ended.discard(pair)
                self._settling[key] -= 1
                if not self._settling[key]:
                    del self._settling[key]
            if handed:
                return None
            self._full.discard(key)
            self.freed += 1
            return key

    @property
    def ending(self) -> int:
        """How many of this worker's runs hold a slot whose body ended (their settle is on its
        way)."""
        return len(self._ended)

    def full(self, key: str) -> None:
        """The store answered ``key`` full while some of this worker's ended runs hold it."""
        with self._lock:
            self._full.add(key)

    def settling(self, key: str) -> int:
        """How many of this worker's ended runs still hold a slot of ``key``."""
        with self._lock:
            return self._settling.get(key, 0)

    def waits(self, key: str, bound: int) -> bool:
        """Whether a run of ``key`` waits for this worker's own settles, no statement asked:
        some ended runs of the key still hold slots, and either the worker holds ``bound``
        slots of it already or the store answered it full since."""
        with self._lock:
            if not self._settling.get(key):
                return False
            return key in self._full or self._held.get(key, 0) >= bound
