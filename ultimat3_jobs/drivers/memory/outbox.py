"""``MemoryOutbox``: the outbox in this process's memory, beside the memory driver.

A concrete store of the :class:`~ultimat3_jobs.drivers.base.OutboxStore` seam, with the rules of
``drivers/postgres/sql/outbox.sql`` and the same parity suite (``tests/drivers/
test_outbox_seam.py``). Staging inside a ``transaction.atomic()`` block on the outbox's alias is
held until that transaction commits (``transaction.on_commit``) and dropped when it, or the
savepoint it was made in, rolls back: what ``x_outbox`` would show other connections. Nothing
survives the process, and nothing is shared with another process.

Layer: a concrete driver (imports L1, L2 and ``django.db``).
"""

from __future__ import annotations

import functools
import heapq
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction

from ultimat3_jobs.drivers.base import OutboxStore, WakeSubscription, outbox_error_text
from ultimat3_jobs.drivers.memory.commit import open_transactions
from ultimat3_jobs.drivers.memory.wake import MemoryWake
from ultimat3_jobs.errors import StoreRefused
from ultimat3_jobs.types import EnqueueRequest


@dataclass(slots=True, kw_only=True)
class _Entry:
    """One row of ``x_outbox``."""

    request: EnqueueRequest  # as stored: run_at resolved, no delay
    created_at: datetime
    seq: int
    relay_id: str | None = None
    lease_expires_at: datetime | None = None
    published_at: datetime | None = None
    publish_attempts: int = 0
    last_error: str = ""


class MemoryOutbox(OutboxStore):
    """Staged jobs in a dict of this process, guarded by one lock."""

    name = "memory"
    stage_visible_in_transaction = False

    def __init__(self, *, database: str = "default") -> None:
        self.database = database
        self._lock = threading.Lock()
        self._entries: dict[uuid.UUID, _Entry] = {}
        self._seq = 0
        self._wakes: list[MemoryWake] = []

    def now(self) -> datetime:
        """The store's clock: leases and retention compare against it."""
        return datetime.now(UTC)

    def outbox_stage_many(self, *, requests: Sequence[EnqueueRequest], notify: bool) -> None:
        now = self.now()
        with self._lock:
            for request in requests:
                if request.id in self._entries:
                    raise StoreRefused(
                        f"x_outbox already holds a row with id {request.id}",
                        reason="duplicate key: x_outbox already holds that id",
                        sqlstate="23505",
                    )
            # created_at and the order are taken at the stage, as the INSERT takes them inside
            # the transaction: a row staged before a later one is claimed first even if its
            # transaction commits after.
            entries = []
            for request in requests:
                self._seq += 1
                entries.append(_Entry(request=_stored(request, now), created_at=now, seq=self._seq))
        write = functools.partial(self._write, entries, notify)
        if self.database in open_transactions():
            transaction.on_commit(write, using=self.database)
        else:
            write()

    def _write(self, entries: list[_Entry], notify: bool) -> None:
        with self._lock:
            for entry in entries:
                self._entries[entry.request.id] = entry
            wakes = list(self._wakes) if notify and entries else []
        for wake in wakes:
            wake.deliver("")

    def outbox_claim(
        self, *, relay_id: str, limit: int, lease_seconds: float
    ) -> list[EnqueueRequest]:
        with self._lock:
            now = self.now()
            free = (
                entry
                for entry in self._entries.values()
                if entry.published_at is None
                and (entry.lease_expires_at is None or entry.lease_expires_at < now)
            )
            picked = heapq.nsmallest(limit, free, key=lambda e: (e.created_at, e.seq, e.request.id))
            until = now + timedelta(seconds=float(lease_seconds))
            for entry in picked:
                entry.relay_id = relay_id
                entry.lease_expires_at = until
            return [_claimed(entry.request, now) for entry in picked]

    def outbox_mark_published(self, *, relay_id: str, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        marked: set[uuid.UUID] = set()
        with self._lock:
            now = self.now()
            for job_id in ids:
                entry = self._owned(relay_id, job_id)
                if entry is not None:
                    entry.published_at = now
                    entry.lease_expires_at = None
                    marked.add(job_id)
        return marked

    def outbox_record_failure(
        self, *, relay_id: str, job_id: uuid.UUID, error: str, retry_seconds: float
    ) -> bool:
        with self._lock:
            entry = self._owned(relay_id, job_id)
            if entry is None:
                return False
            entry.publish_attempts += 1
            entry.last_error = outbox_error_text(error)
            entry.lease_expires_at = self.now() + timedelta(seconds=float(retry_seconds))
            return True

    def outbox_purge_published(
        self, *, retention_seconds: float, limit: int, before: datetime | None = None
    ) -> int:
        with self._lock:
            if before is None:
                before = self.now() - timedelta(seconds=float(retention_seconds))
            gone = self._published_before(before)[:limit]
            for job_id in gone:
                del self._entries[job_id]
            return len(gone)

    def outbox_count_published(self, *, before: datetime, limit: int) -> int:
        with self._lock:
            return min(len(self._published_before(before)), max(0, int(limit)))

    def _published_before(self, before: datetime) -> list[uuid.UUID]:
        cutoff = before.astimezone(UTC)
        return [
            job_id
            for job_id, entry in self._entries.items()
            if entry.published_at is not None and entry.published_at < cutoff
        ]

    def wake_subscribe(self, *, on_wake: Callable[[str], None]) -> WakeSubscription | None:
        """``on_wake("")`` is called by the thread whose staging commits, with ``notify``."""
        wake = MemoryWake(self, on_wake)
        with self._lock:
            self._wakes.append(wake)
        return wake

    def _unsubscribe(self, wake: MemoryWake) -> None:
        with self._lock:
            if wake in self._wakes:
                self._wakes.remove(wake)

    def close(self) -> None:
        with self._lock:
            wakes, self._wakes = self._wakes, []
        for wake in wakes:
            wake.close()

    def _owned(self, relay_id: str, job_id: uuid.UUID) -> _Entry | None:
        entry = self._entries.get(job_id)
        if entry is None or entry.relay_id != relay_id or entry.published_at is not None:
            return None
        return entry

    # -- test support: what the PostgreSQL tests do with an UPDATE or a SELECT -----------------

    def _set_lease_expires_at(self, job_id: uuid.UUID, when: datetime) -> None:
        with self._lock:
            self._entries[job_id].lease_expires_at = when

    def _shift_published_at(self, job_id: uuid.UUID, by: timedelta) -> None:
        with self._lock:
            entry = self._entries[job_id]
            assert entry.published_at is not None, f"{job_id} is not published"
            entry.published_at += by

    def _row(self, job_id: uuid.UUID) -> dict[str, Any] | None:
        """The columns of one row the tests read, or None when it is gone."""
        with self._lock:
            entry = self._entries.get(job_id)
            if entry is None:
                return None
            return {
                "relay_id": entry.relay_id,
                "published": entry.published_at is not None,
                "publish_attempts": entry.publish_attempts,
                "last_error": entry.last_error,
                "run_at": entry.request.run_at,
            }


def _stored(request: EnqueueRequest, now: datetime) -> EnqueueRequest:
    """The row ``x_outbox`` keeps: ``run_at`` resolved at the stage (a delay counts from it)."""
    if request.run_at is None:
        run_at = now + timedelta(seconds=float(request.delay_seconds or 0))
    elif request.run_at.tzinfo is None:  # read as ``::timestamptz`` reads it in a UTC session
        run_at = request.run_at.replace(tzinfo=UTC)
    else:
        run_at = request.run_at.astimezone(UTC)
    return replace(request, run_at=run_at, delay_seconds=None, on_conflict="dedupe")


def _claimed(request: EnqueueRequest, now: datetime) -> EnqueueRequest:
    """A claimed row as the relay publishes it: one already due carries no ``run_at`` (due at
    the publish, which wakes the workers)."""
    assert request.run_at is not None
    return replace(request, run_at=None) if request.run_at <= now else request
