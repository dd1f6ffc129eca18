"""The Redis driver's lease store (``lua/lease_*.lua``), mixed into
:class:`~ultimat3_jobs.drivers.redis.driver.RedisDriver`: the rules of
``drivers/leases_seam.py``, one script per method.

The rows of one lease key live in one hash (``B:lease:<key>``, one field per slot), and the
concurrency slots a running job took in a set beside it (``B:slots:<id>``). The scripts that
move a job out of ``running`` (settle, rescue, suspend, cancel, remove) free those slots in the
same script (``move`` in ``lua/_lib.lua``) and the heartbeat renews them, so the slots follow
the attempt as the PostgreSQL statements make them. A script runs alone, so ``lease_acquire``
checks every request before it writes any: all or nothing without a give-back, and no race
between two acquirers of one key.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from ultimat3_jobs.drivers.leases_seam import LeaseGrant, LeaseHolder, LeaseRequest
from ultimat3_jobs.drivers.redis import codec
from ultimat3_jobs.drivers.redis.connection import RedisStore
from ultimat3_jobs.drivers.redis.scripts import speaks_seam_errors


def holder(key: str, answer: Sequence[Any]) -> LeaseHolder:
    """One row as ``lease_holders.lua`` answers it."""
    slot, kind, job_id, token, acquired, expires = (codec.text(value) for value in answer)
    return LeaseHolder(
        key=key,
        slot=int(str(slot)),
        kind=kind,  # type: ignore[arg-type]
        job_id=uuid.UUID(job_id),
        claim_token=uuid.UUID(token),
        acquired_at=codec.moment(acquired),  # type: ignore[arg-type]
        expires_at=codec.moment(expires),  # type: ignore[arg-type]
    )


@speaks_seam_errors
class LeaseScriptMethods(RedisStore):
    """``lease_acquire``, ``lease_holders``, ``lease_abandon``, ``lease_release``."""

    has_lease_store: ClassVar[bool] = True

    def lease_acquire(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, requests: Sequence[LeaseRequest]
    ) -> LeaseGrant:
        args = [str(job_id), str(claim_token), str(len(requests))]
        for request in requests:
            args += [request.key, str(int(request.limit)), request.kind]
            args.append(repr(max(0.0, float(request.ttl_seconds))))
        answer = self._run("lease_acquire", args)
        status = int(answer[0])
        if status == 1:
            return LeaseGrant(granted=True)
        if status == 0:
            return LeaseGrant(granted=False)
        wait = int(codec.text(answer[2]) or 0) / 1_000_000
        return LeaseGrant(granted=False, busy_key=codec.text(answer[1]), retry_after=wait)

    def lease_holders(self, *, key: str) -> list[LeaseHolder]:
        rows = [holder(key, row) for row in self._run("lease_holders", [key])]
        return sorted(rows, key=lambda row: row.slot)

    def lease_abandon(self, *, job_id: uuid.UUID, claim_token: uuid.UUID) -> int:
        return int(self._run("lease_abandon", [str(job_id), str(claim_token)]))

    def lease_release(self, *, key: str) -> int:
        return int(self._run("lease_release", [key]))
