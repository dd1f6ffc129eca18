"""The memory driver's lease store (``drivers/postgres/sql/leases.sql``): one row per held
concurrency slot or spent rate stamp, under the driver's one lock. ``state.py`` frees a run's
slots when its row leaves ``running`` (settle, rescue, suspend, cancel) and the heartbeat renews
them (``jobs.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import ClassVar

from ultimat3_jobs.carry import carry
from ultimat3_jobs.drivers import leases_seam
from ultimat3_jobs.drivers.memory.rows import _Row
from ultimat3_jobs.drivers.memory.state import MemoryState
from ultimat3_jobs.types import JobState


class LeaseStatements(MemoryState):
    """Acquire, holders, abandon, release, list."""

    has_lease_store: ClassVar[bool] = True

    def lease_acquire(
        self,
        *,
        job_id: uuid.UUID,
        claim_token: uuid.UUID,
        requests: Sequence[leases_seam.LeaseRequest],
    ) -> leases_seam.LeaseGrant:
        with self._lock:
            now = self.now()
            row = self._owned(job_id, claim_token)
            if row is None or row.lease_expires_at is None:
                return leases_seam.LeaseGrant(granted=False)
            taken: list[leases_seam.LeaseHolder] = []
            for request in requests:
                slot = self._free_slot(request, row, now)
                if slot is None:
                    for lease in taken:  # all or nothing: give back what this call took
                        self._drop_lease(lease)
                    live = [h.expires_at for h in self._live(request.key, now)]
                    wait = (min(live) - now).total_seconds() if live else 0.0
                    return leases_seam.LeaseGrant(
                        granted=False, busy_key=request.key, retry_after=wait
                    )
                expires = (
                    now + timedelta(seconds=float(request.ttl_seconds))
                    if request.kind == "rate"
                    else row.lease_expires_at
                )
                lease = carry(
                    leases_seam.LeaseHolder,
                    request,
                    slot=slot,
                    job_id=job_id,
                    claim_token=claim_token,
                    acquired_at=now,
                    expires_at=expires,
                )
                self._leases[(request.key, slot)] = lease
                if request.kind == "concurrency":
                    self._lease_jobs.setdefault(job_id, set()).add((request.key, slot))
                    taken.append(lease)
            row.started_at = now
            return leases_seam.LeaseGrant(granted=True)

    def _live(self, key: str, now: datetime) -> list[leases_seam.LeaseHolder]:
        found = [lease for (k, _), lease in self._leases.items() if k == key]
        return sorted((h for h in found if h.expires_at > now), key=lambda h: h.slot)

    def _free_slot(self, request: leases_seam.LeaseRequest, row: _Row, now: datetime) -> int | None:
        """Its own leftover concurrency slot first, else the lowest slot with no live row."""
        taken: set[int] = set()
        for lease in self._live(request.key, now):
            if request.kind == "concurrency" and lease.job_id == row.id:
                self._drop_lease(lease)
                return lease.slot
            taken.add(lease.slot)
        return next((slot for slot in range(request.limit) if slot not in taken), None)

    def _drop_lease(self, lease: leases_seam.LeaseHolder) -> None:
        place = (lease.key, lease.slot)
        self._leases.pop(place, None)
        held = self._lease_jobs.get(lease.job_id)
        if held is not None:
            held.discard(place)
            if not held:
                del self._lease_jobs[lease.job_id]

    def lease_holders(self, *, key: str) -> list[leases_seam.LeaseHolder]:
        with self._lock:
            return self._live(key, self.now())

    def lease_abandon(self, *, job_id: uuid.UUID, claim_token: uuid.UUID) -> int:
        with self._lock:
            mine = [
                self._leases[place]
                for place in self._lease_jobs.get(job_id, set())
                if self._leases[place].claim_token == claim_token
            ]
            for lease in mine:
                self._drop_lease(lease)
            return len(mine)

    def lease_release(self, *, key: str) -> int:
        with self._lock:
            held = [
                lease
                for (k, _), lease in self._leases.items()
                if k == key and lease.kind == "concurrency"
            ]
            for lease in held:
                self._drop_lease(lease)
            return len(held)

    def lease_list(
        self, *, kind: leases_seam.LeaseKind | None = None, limit: int = leases_seam.LEASE_LIST_MAX
    ) -> list[leases_seam.LeaseHolder]:
        leases_seam.check_lease_list(kind, limit)
        with self._lock:
            now = self.now()
            live = sorted(
                (h for h in self._leases.values() if h.expires_at > now),
                key=lambda h: (h.key.encode(), h.slot),
            )
            chosen = [h for h in live if kind is None or h.kind == kind][:limit]
            return [replace(h, worker_id=self._holding_worker(h)) for h in chosen]

    def _holding_worker(self, lease: leases_seam.LeaseHolder) -> str | None:
        row = self._rows.get(lease.job_id)
        if row is None or row.state != JobState.RUNNING or row.claim_token != lease.claim_token:
            return None
        return row.worker_id
