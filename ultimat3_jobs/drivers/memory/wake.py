"""``MemoryWake``: the wake subscription of the memory driver and of the memory outbox."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from ultimat3_jobs.drivers.common import call_on_wake


class _Subscribers(Protocol):
    def _unsubscribe(self, wake: MemoryWake) -> None: ...


class MemoryWake:
    """A :class:`~ultimat3_jobs.drivers.base.WakeSubscription` of the memory driver (and of the
    memory outbox): the writing thread calls ``on_wake(queue)`` right after the write, outside
    the store's lock. Live until closed."""

    def __init__(self, driver: _Subscribers, on_wake: Callable[[str], None]) -> None:
        self._driver = driver
        self._on_wake = on_wake
        # Held while on_wake runs, so close() returns only once no call is in flight; reentrant
        # so that on_wake may itself close the subscription.
        self._lock = threading.RLock()
        self._closed = False

    def is_live(self) -> bool:
        """True until :meth:`close`."""
        return not self._closed

    def close(self) -> None:
        """Stop the wakes; no ``on_wake`` call follows."""
        with self._lock:
            self._closed = True
        self._driver._unsubscribe(self)

    def deliver(self, queue: str) -> None:
        """Call ``on_wake(queue)`` unless closed; an exception in it is logged, not raised."""
        with self._lock:
            if self._closed:
                return
            call_on_wake(self._on_wake, queue)
