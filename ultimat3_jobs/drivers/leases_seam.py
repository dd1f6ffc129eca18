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
* **Hand-off.** ``job_settle_handoff`` settles a batch and, in the same write, passes each
  concurrency slot a settled run held to a next run of the same key (one concurrency slot
  each): the slot's row changes hands, so the key never holds more rows, and the next run's
  ``started_at`` is at or after the settled run's ``finished_at`` (a next run marked ``relayed``
  is not stamped by the hand-off: its own settle is). A next run is fenced like
  ``lease_acquire`` and must hold no live slot of its key. A driver that cannot hand off grants
  none (``hands_off_slots = False``): the runs take their slots through ``lease_acquire_many``.
  A worker whose driver hands off lends a finished run's slot to its next run before the settle
  (``runtime/worker/handoff.py``); a settled item marked ``relayed`` (a run that used a lent
  slot that no row ever named) is stamped started at the settle's moment, and one with
  ``lent_by`` lands only while the row of that job is there (the answer's ``held`` names the
  settled runs whose rows were found, so a later ending of a run that rode one needs no check).
* **Abandon, never release, a run that never started**: ``lease_abandon`` frees the attempt's
  concurrency slots; its rate stamps stay spent.

The operator reads every live row with ``lease_list`` (``manage.py jobs leases``, the admin's
queues page, the metrics) and frees a stuck key with ``lease_release``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Literal

from ultimat3_jobs.errors import ConcurrencyUnenforceable, DriverCapabilityMissing, StoreRefused

LeaseKind = Literal["concurrency", "rate"]
LEASE_KINDS: tuple[LeaseKind, ...] = ("concurrency", "rate")
LEASE_LIST_MAX = 1_000
"""The most rows one ``lease_list`` answers: one read stays short however many keys are held."""


@dataclass(frozen=True, slots=True)
class LeaseRequest:
    """One slot to take: of ``key``, one of ``limit``. ``ttl_seconds``: how long a rate stamp
    stays spent (ignored for a concurrency slot, which follows the attempt's lease)."""

    key: str
    limit: int
    kind: LeaseKind = "concurrency"
    ttl_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class LeaseRun:
    """One running attempt's requests, for ``lease_acquire_many``. ``relayed``: offered to
    ``job_settle_handoff``, it already runs on the slot, lent: a grant does not stamp its
    ``started_at`` (its own settle, marked ``relayed``, does)."""

    job_id: uuid.UUID
    claim_token: uuid.UUID
    requests: Sequence[LeaseRequest]
    relayed: bool = False


@dataclass(frozen=True, slots=True)
class LeaseGrant:
    """What ``lease_acquire`` did. ``granted``: every request was taken. Else ``busy_key`` is
    the first full key (``None`` when the fence missed: the attempt is not running under its
    claim token) and ``retry_after`` the seconds until its first row expires."""

    granted: bool
    busy_key: str | None = None
    retry_after: float = 0.0


@dataclass(frozen=True, slots=True)
class HandOff:
    """What ``job_settle_handoff`` did: the settled ids that ``landed``, the next runs
    ``granted`` a slot that a settled run let go, and the settled runs whose concurrency rows
    were ``held`` (found, then passed on or freed): a run whose slot was lent learns whether
    its row was still there (an operator's release or cancel may have deleted it)."""

    landed: set[uuid.UUID]
    granted: set[uuid.UUID]
    held: set[uuid.UUID] = field(default_factory=set)


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseHolder:
    """One live (unexpired) row of a key. ``worker_id``: the worker whose claim holds the job
    now, read by ``lease_list`` only (``None`` elsewhere, and once the job left that claim)."""

    key: str
    slot: int
    kind: LeaseKind
    job_id: uuid.UUID
    claim_token: uuid.UUID
    acquired_at: datetime
    expires_at: datetime
    worker_id: str | None = None


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

    def lease_acquire_many(self, *, runs: Sequence[LeaseRun]) -> list[LeaseGrant]:
        """``lease_acquire`` for each run, in the order given, as one call: the same answers,
        one per run, as calling it for each in turn (the earlier runs of a key take its free
        slots first). A driver may take them in fewer round trips; this default calls
        ``lease_acquire`` once per run."""
        return [
            self.lease_acquire(
                job_id=run.job_id, claim_token=run.claim_token, requests=run.requests
            )
            for run in runs
        ]

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

    def lease_list(
        self, *, kind: LeaseKind | None = None, limit: int = LEASE_LIST_MAX
    ) -> list[LeaseHolder]:
        """The live rows of every key (of one ``kind`` when given), by key then slot, at most
        ``limit`` (1 to :data:`LEASE_LIST_MAX`), each with the ``worker_id`` whose claim still
        holds its job. One read. A driver without a lease store refuses with
        :class:`~ultimat3_jobs.errors.DriverCapabilityMissing`."""
        name = getattr(self, "name", type(self).__name__)
        raise DriverCapabilityMissing(f"driver {name!r} keeps no lease store (lease_list)")


def check_lease_list(kind: LeaseKind | None, limit: int) -> None:
    """Refuse a ``lease_list`` outside its rules (``kind``, ``limit``) with
    :class:`~ultimat3_jobs.errors.StoreRefused`, before any read."""
    if kind is not None and kind not in LEASE_KINDS:
        raise StoreRefused(f"kind must be one of {LEASE_KINDS} or None; got {kind!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LEASE_LIST_MAX:
        raise StoreRefused(f"limit must be an integer from 1 to {LEASE_LIST_MAX}; got {limit!r}")
