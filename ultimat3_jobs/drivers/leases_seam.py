"""The seam's lease store: :class:`LeaseMethods`, which :class:`JobDriver` inherits.

Layer L2 (the seam), like ``drivers/base.py``: imports L1 only. A driver that keeps leases says so
with ``has_lease_store = True`` and passes ``tests/drivers/test_leases.py``; one that does not
keeps the defaults below, and a worker refuses to run a job that declares a limit on it
(``X_JOB_CONCURRENCY_UNENFORCEABLE``).

One row per held slot, keyed ``(key, slot)``, ``slot`` from 0 to the limit less one:

* **Concurrency** (``kind="concurrency"``): the row is held by one running attempt (its job id
  and claim token); it expires with the attempt's own lease, is renewed by
  ``job_heartbeat_many`` and deleted by the statements that settle or rescue the attempt. An
  expired row is a free slot.
* **Rate** (``kind="rate"``): a stamp, spent when a run is let start and kept for the rate's
  period whatever the run does; nothing deletes it, an expired stamp is free again. So at most
  ``limit`` runs start within any window of the period.

Rules every driver keeps:

* **Fenced.** ``lease_acquire`` takes nothing unless the job is ``running`` under the claim
  token; granted, it stamps the job's ``started_at`` with the store's clock (the moment the run
  was let start).
* **All or nothing.** The requests are taken in order; when one is full, the slots taken before
  it in the same call are given back and the answer names the full key.
* **Its own leftover.** A concurrency slot the same job still holds (an earlier attempt's,
  not expired) is taken over, never counted against it.
* **Abandon, never release, a run that never started**: ``lease_abandon`` frees the attempt's
  concurrency slots; its rate stamps stay spent.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Literal

from ultimat3_jobs.errors import ConcurrencyUnenforceable

LeaseKind = Literal["concurrency", "rate"]
LEASE_KINDS: tuple[LeaseKind, ...] = ("concurrency", "rate")


@dataclass(frozen=True, slots=True)
class LeaseRequest:
    """One slot to take: of ``key``, one of ``limit``. ``ttl_seconds``: how long a rate stamp
    stays spent (ignored for a concurrency slot, which follows the attempt's lease)."""

    key: str
    limit: int
    kind: LeaseKind = "concurrency"
    ttl_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class LeaseGrant:
    """What ``lease_acquire`` did. ``granted``: every request was taken. Else ``busy_key`` is
    the first full key (``None`` when the fence missed: the attempt is not running under its
    claim token) and ``retry_after`` the seconds until its first row expires."""

    granted: bool
    busy_key: str | None = None
    retry_after: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseHolder:
    """One live (unexpired) row of a key."""

    key: str
    slot: int
    kind: LeaseKind
    job_id: uuid.UUID
    claim_token: uuid.UUID
    acquired_at: datetime
    expires_at: datetime


class LeaseMethods:
    """The lease store. The defaults are a driver without one: every call refuses."""

    has_lease_store: ClassVar[bool] = False
    """True when the driver keeps leases (and so can enforce ``concurrency`` and ``rate``)."""

    def _no_lease_store(self) -> ConcurrencyUnenforceable:
        name = getattr(self, "name", type(self).__name__)
        return ConcurrencyUnenforceable(
            f"driver {name!r} has no lease store: a job's concurrency or rate cannot be "
            "enforced on it",
            field="driver",
            rule="lease-store",
        )

    def lease_acquire(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, requests: Sequence[LeaseRequest]
    ) -> LeaseGrant:
        """Take one slot of each request, all or nothing, for the running attempt (see the
        module's rules)."""
        raise self._no_lease_store()

    def lease_holders(self, *, key: str) -> list[LeaseHolder]:
        """The live rows of ``key``, by slot."""
        raise self._no_lease_store()

    def lease_abandon(self, *, job_id: uuid.UUID, claim_token: uuid.UUID) -> int:
        """An attempt that never started lets its concurrency slots go (its rate stamps stay
        spent). Answers how many rows went."""
        raise self._no_lease_store()

    def lease_release(self, *, key: str) -> int:
        """Free every concurrency slot of ``key`` now (an operator freeing a stuck key; the
        runs holding them are not stopped). Answers how many rows went."""
        raise self._no_lease_store()
