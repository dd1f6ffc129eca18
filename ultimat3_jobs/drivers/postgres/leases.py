"""The lease store of the PostgreSQL driver (``sql/leases.sql``), mixed into
:class:`~ultimat3_jobs.drivers.postgres.driver.PostgresDriver`.

Slots live in ``x_job_leases``, one row per held slot. ``lease_acquire`` runs one statement per
request, in autocommit like every other write of the worker; ``lease_acquire_many`` takes one
concurrency slot for each of many runs in one statement (``lease_acquire`` for what it leaves).
Acquirers of one key take turns on the key's advisory lock, never waiting for it: a statement
that found the lock taken, or that lost a race for a slot (another acquirer inserted it after
its snapshot), runs again with a fresh snapshot, a few times at most, and the key is then
answered busy. The settle, heartbeat,
rescue and suspend statements (``sql/jobs.sql``, ``sql/steps.sql``) free and renew an attempt's
slots themselves.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from typing import ClassVar

from ultimat3_jobs.drivers.leases_seam import (
    LEASE_LIST_MAX,
    LeaseGrant,
    LeaseHolder,
    LeaseKind,
    LeaseRequest,
    LeaseRun,
    check_lease_list,
)
from ultimat3_jobs.drivers.postgres.rows import leases as lease_rows
from ultimat3_jobs.drivers.postgres.rows.result import fetch
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.models import RawStatementManager

logger = logging.getLogger("ultimat3_jobs.driver")

RACE_RETRIES = 8
"""How many times one request runs again after finding its key's lock taken or losing a race
for a free slot."""
RACE_PAUSE_SECONDS = 0.001
"""The pause before running again, times the tries so far: the other acquirer's statement is
about one round trip long."""


@speaks_seam_errors
class LeaseStatements:
    """Mixed into the driver; reads its ``x_jobs`` statement manager."""

    _jobs: RawStatementManager
    has_lease_store: ClassVar[bool] = True

    def lease_acquire(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, requests: Sequence[LeaseRequest]
    ) -> LeaseGrant:
        taken: list[tuple[str, int]] = []
        for request in requests:
            slot, answer = self._take(job_id, claim_token, request)
            if slot is None:
                for key, held in taken:
                    self._jobs.run(
                        "lease_give_back",
                        {"key": key, "slot": held, "job_id": job_id, "claim_token": claim_token},
                    )
                return answer
            if request.kind == "concurrency":
                taken.append((request.key, slot))
        return LeaseGrant(granted=True)

    def _take(
        self, job_id: uuid.UUID, claim_token: uuid.UUID, request: LeaseRequest
    ) -> tuple[int | None, LeaseGrant]:
        params = {
            "job_id": job_id,
            "claim_token": claim_token,
            "key": request.key,
            "limit": int(request.limit),
            "kind": request.kind,
            "ttl_seconds": float(request.ttl_seconds),
        }
        for tries in range(RACE_RETRIES + 1):
            row = fetch(self._jobs, "lease_acquire", params).first(
                "slot", "locked", "fenced", "free", "retry_after"
            )
            assert row is not None  # the statement answers one row, always
            slot, locked, fenced, free, retry_after = row
            if not fenced:
                return None, LeaseGrant(granted=False)
            if slot is not None:
                return int(slot), LeaseGrant(granted=True)
            if locked and not free:
                wait = max(0.0, float(retry_after or 0.0))
                return None, LeaseGrant(granted=False, busy_key=request.key, retry_after=wait)
            time.sleep(RACE_PAUSE_SECONDS * tries)
        logger.info("jobs.lease.contended: %s stayed contended; answered busy", request.key)
        return None, LeaseGrant(granted=False, busy_key=request.key)

    def lease_acquire_many(self, *, runs: Sequence[LeaseRun]) -> list[LeaseGrant]:
        """One statement when every run asks one concurrency slot (the worker's common case),
        run again for the runs it left contended (their key's lock taken, a race lost), a few
        times at most, as ``lease_acquire`` does; a run with a leftover slot of its own, and
        runs with other requests, go through ``lease_acquire``, in order."""
        if not runs or any(_not_one_slot(run) for run in runs):
            return [self._acquire_one(run) for run in runs]
        answers: list[LeaseGrant | None] = [None] * len(runs)
        pending = list(range(len(runs)))
        for tries in range(RACE_RETRIES + 1):
            if tries:
                time.sleep(RACE_PAUSE_SECONDS * tries)
            pending = self._acquire_set(runs, pending, answers)
            if not pending:
                break
        for i in pending:
            key = _sole(runs[i]).key
            logger.info("jobs.lease.contended: %s stayed contended; answered busy", key)
            answers[i] = LeaseGrant(granted=False, busy_key=key)
        return [answer or LeaseGrant(granted=False) for answer in answers]

    def _acquire_set(
        self, runs: Sequence[LeaseRun], pending: list[int], answers: list[LeaseGrant | None]
    ) -> list[int]:
        """One ``lease_acquire_many`` statement for the ``pending`` runs, answered in place;
        answers the runs left contended."""
        asked = [runs[i] for i in pending]
        params = {
            "ids": [run.job_id for run in asked],
            "tokens": [run.claim_token for run in asked],
            "keys": [_sole(run).key for run in asked],
            "limits": [int(_sole(run).limit) for run in asked],
        }
        result = fetch(self._jobs, "lease_acquire_many", params)
        columns = ("n", "slot", "fenced", "locked", "leftover", "free", "retry_after")
        again: list[int] = []
        for n, slot, fenced, locked, leftover, free, retry_after in result.picked(*columns):
            i = pending[int(n) - 1]
            if not fenced:
                answers[i] = LeaseGrant(granted=False)
            elif slot is not None:
                answers[i] = LeaseGrant(granted=True)
            elif leftover:
                answers[i] = self._acquire_one(runs[i])
            elif locked and not free:
                wait = max(0.0, float(retry_after or 0.0))
                key = _sole(runs[i]).key
                answers[i] = LeaseGrant(granted=False, busy_key=key, retry_after=wait)
            else:
                again.append(i)
        return again

    def _acquire_one(self, run: LeaseRun) -> LeaseGrant:
        return self.lease_acquire(
            job_id=run.job_id, claim_token=run.claim_token, requests=run.requests
        )

    def lease_holders(self, *, key: str) -> list[LeaseHolder]:
        return lease_rows.holders(fetch(self._jobs, "lease_holders", {"key": key}))

    def lease_abandon(self, *, job_id: uuid.UUID, claim_token: uuid.UUID) -> int:
        params = {"job_id": job_id, "claim_token": claim_token}
        return len(self._jobs.run("lease_abandon", params))

    def lease_release(self, *, key: str) -> int:
        return len(self._jobs.run("lease_release", {"key": key}))

    def lease_list(
        self, *, kind: LeaseKind | None = None, limit: int = LEASE_LIST_MAX
    ) -> list[LeaseHolder]:
        check_lease_list(kind, limit)
        params = {"kind": kind, "limit": limit}
        return lease_rows.listed(fetch(self._jobs, "lease_list", params))


def one_slot(run: LeaseRun) -> LeaseRequest | None:
    """The one concurrency slot ``run`` asks, when that is all it asks (what one-statement
    grants serve); else ``None``."""
    if len(run.requests) != 1 or _sole(run).kind != "concurrency":
        return None
    return _sole(run)


def _not_one_slot(run: LeaseRun) -> bool:
    return one_slot(run) is None


def _sole(run: LeaseRun) -> LeaseRequest:
    """The one request of a run that asks one (checked by :func:`_not_one_slot` first)."""
    (request,) = run.requests
    return request
