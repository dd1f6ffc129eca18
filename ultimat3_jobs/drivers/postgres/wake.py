"""Which enqueues send a NOTIFY: at most one per queue per short slot, per process.

Every notifying commit serialises on one PostgreSQL lock, so a burst of enqueues wakes the
listeners once per slot; a job committed later in the same slot is found by the listener's next
short poll. The throttle may only count a NOTIFY that is delivered now:

- An autocommit enqueue commits with its statement: the throttle decides at once and the
  statement carries the NOTIFY.
- An enqueue inside ``transaction.atomic()`` carries none. Its NOTIFY would be delivered at a
  commit that may never come (a rollback drops it) or may come long after the slot, while
  marking the slot now would silence the other enqueues of the slot. The throttle decides at the
  commit instead (``transaction.on_commit``), and one ``wake_notify`` statement sends the wake.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple

from django.db import DatabaseError, connections, transaction

from ultimat3_jobs.models import RawStatementManager

logger = logging.getLogger("ultimat3_jobs.driver")

WAKE_SLOT_SECONDS = 0.05
"""An enqueue notifies at most once per queue per slot (per process): every notifying commit
serialises on one PostgreSQL lock, so a burst of enqueues wakes the workers once."""


class WakeThrottle:
    """Decides which enqueues notify: the first per queue in each slot, counted when the
    NOTIFY is delivered."""

    def __init__(
        self,
        slot_seconds: float = WAKE_SLOT_SECONDS,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._slot_seconds = slot_seconds
        self._clock = clock
        self._last: dict[str, int] = {}
        self._lock = threading.Lock()

    def allow(self, queues: Iterable[str]) -> list[str]:
        """The queues that have not been notified in the current slot, now marked notified."""
        slot = int(self._clock() / self._slot_seconds)
        allowed = []
        with self._lock:
            for queue in queues:
                if self._last.get(queue) != slot:
                    self._last[queue] = slot
                    allowed.append(queue)
        return allowed

    def for_statement(
        self,
        rows: RawStatementManager,
        queues: Iterable[str],
        *,
        channel: str,
        payload: str | None = None,
    ) -> list[str]:
        """The queues the next statement on ``rows``' alias should NOTIFY: decided now in
        autocommit; none inside a transaction, whose wake is sent on ``channel`` after its
        commit (with ``payload``, or each queue's name, as the NOTIFY's payload)."""
        wanted = list(dict.fromkeys(queues))
        if not wanted:
            return []
        if not connections[rows.db].in_atomic_block:
            return self.allow(wanted)
        after = functools.partial(self._notify_after_commit, rows, wanted, channel, payload)
        transaction.on_commit(after, using=rows.db)
        return []

    def _notify_after_commit(
        self, rows: RawStatementManager, queues: list[str], channel: str, payload: str | None
    ) -> None:
        allowed = self.allow(queues)
        if not allowed:
            return
        payloads = [payload] if payload is not None else allowed
        try:
            rows.run("wake_notify", {"channel": channel, "payloads": payloads})
        except DatabaseError:
            # The wake is an optimisation; the listeners' poll finds the committed jobs.
            logger.warning("jobs.wake.notify_failed", exc_info=True)


class IdleListing(NamedTuple):
    """What the claim that found a worker idle asked for."""

    queues: tuple[str, ...]
    lease_seconds: float


class IdleWorkers:
    """The workers of this process whose last claim found fewer jobs than it asked for, each with
    that claim's queues and lease: a wake that names a job on one of those queues is claimed for
    the worker (``job_claim_notified``) and handed to it, once per such claim, as the Redis
    driver hands an enqueue's job to the worker listed idle on its queue."""

    def __init__(self) -> None:
        self._idle: dict[str, IdleListing] = {}
        self._lock = threading.Lock()

    def claimed(
        self, worker_id: str, queues: Iterable[str], lease_seconds: float, *, idle: bool
    ) -> None:
        """Record a claim of ``worker_id``: ``idle`` when it found fewer than it asked for."""
        with self._lock:
            if idle:
                self._idle[worker_id] = IdleListing(tuple(queues), lease_seconds)
            else:
                self._idle.pop(worker_id, None)

    def take(self, worker_id: str, queue: str) -> IdleListing | None:
        """The queues and lease of an idle ``worker_id`` that claims ``queue``, now no longer
        listed idle (one hand per claim that found too few); ``None`` otherwise."""
        with self._lock:
            listed = self._idle.get(worker_id)
            if listed is None or queue not in listed.queues:
                return None
            del self._idle[worker_id]
            return listed
