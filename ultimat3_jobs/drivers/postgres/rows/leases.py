"""Rows of the lease statements (``sql/leases.sql``) by column name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ultimat3_jobs.drivers.leases_seam import LeaseHolder
from ultimat3_jobs.drivers.postgres.rows.result import Result, as_uuid

HOLDER = ("key", "slot", "kind", "job_id", "claim_token", "acquired_at", "expires_at")


def _holder(row: Sequence[Any], worker_id: str | None = None) -> LeaseHolder:
    """One row picked by :data:`HOLDER`, with the worker when the statement reads it."""
    key, slot, kind, job_id, token, acquired_at, expires_at = row
    return LeaseHolder(
        key=key,
        slot=slot,
        kind=kind,
        job_id=as_uuid(job_id),
        claim_token=as_uuid(token),
        acquired_at=acquired_at,
        expires_at=expires_at,
        worker_id=worker_id,
    )


def holders(result: Result) -> list[LeaseHolder]:
    return [_holder(row) for row in result.picked(*HOLDER)]


def listed(result: Result) -> list[LeaseHolder]:
    """``lease_list``'s rows: holders with the worker whose claim holds each job."""
    picked = result.picked(*HOLDER, "worker_id")
    return [_holder(held, worker_id) for *held, worker_id in picked]
