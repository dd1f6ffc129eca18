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

``lease_list`` finds the lease keys with ``SCAN`` (a cursor walk of a few hundred keys a call,
never one blocking command) and reads their rows a chunk of keys per script, in key order,
until it has ``limit`` rows: a read of the live rows, not one snapshot of them all.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from ultimat3_jobs.drivers.leases_seam import (
    LEASE_LIST_MAX,
    LeaseGrant,
    LeaseHolder,
    LeaseKind,
    LeaseRequest,
    check_lease_list,
)
from ultimat3_jobs.drivers.redis import codec
from ultimat3_jobs.drivers.redis.connection import RedisStore
from ultimat3_jobs.drivers.redis.scripts import speaks_seam_errors

LIST_CHUNK = 200
"""How many lease keys one ``lease_list.lua`` call reads."""
SCAN_COUNT = 500
_GLOB = re.compile(r"([*?\[\]\\])")


def holder(key: str, answer: Sequence[Any], worker_id: str | None = None) -> LeaseHolder:
    """One row as ``lease_holders.lua`` (or ``lease_list.lua``) answers it."""
    slot, kind, job_id, token, acquired, expires = (codec.text(value) for value in answer)
    return LeaseHolder(
        key=key,
        worker_id=worker_id,
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

    def lease_list(
        self, *, kind: LeaseKind | None = None, limit: int = LEASE_LIST_MAX
    ) -> list[LeaseHolder]:
        check_lease_list(kind, limit)
        head = f"{self.prefix}:lease:".encode()
        pattern = _GLOB.sub(r"\\\1", head.decode()) + "*"  # the prefix taken literally
        names = self.redis().scan_iter(match=pattern, count=SCAN_COUNT)
        found = (name if isinstance(name, bytes) else str(name).encode() for name in names)
        # By code point (UTF-8 bytes), as PostgreSQL's collate "C".
        keys = sorted(name[len(head) :] for name in found if name.startswith(head))
        rows: list[LeaseHolder] = []
        for start in range(0, len(keys), LIST_CHUNK):
            chunk = [key.decode() for key in keys[start : start + LIST_CHUNK]]
            answer = self._run("lease_list", [kind or "", str(limit - len(rows)), *chunk])
            for row in answer:
                key, worker = codec.text(row[0]), codec.text(row[7])
                rows.append(holder(str(key), row[1:7], worker or None))
            if len(rows) >= limit:
                break
        return rows
