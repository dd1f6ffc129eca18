"""Rows of the lease statements (``sql/leases.sql``) by column name."""

from __future__ import annotations

from ultimat3_jobs.drivers.leases_seam import LeaseHolder
from ultimat3_jobs.drivers.postgres.rows.result import Result, as_uuid

HOLDER = ("key", "slot", "kind", "job_id", "claim_token", "acquired_at", "expires_at")


def holders(result: Result) -> list[LeaseHolder]:
    return [
        LeaseHolder(
            key=key,
            slot=slot,
            kind=kind,
            job_id=as_uuid(job_id),
            claim_token=as_uuid(token),
            acquired_at=acquired_at,
            expires_at=expires_at,
        )
        for key, slot, kind, job_id, token, acquired_at, expires_at in result.picked(*HOLDER)
    ]


def listed(result: Result) -> list[LeaseHolder]:
    """``lease_list``'s rows: holders with the worker whose claim holds each job."""
    return [
        LeaseHolder(
            key=key,
            slot=slot,
            kind=kind,
            job_id=as_uuid(job_id),
            claim_token=as_uuid(token),
            acquired_at=acquired_at,
            expires_at=expires_at,
            worker_id=worker_id,
        )
        for key, slot, kind, job_id, token, acquired_at, expires_at, worker_id in result.picked(
            *HOLDER, "worker_id"
        )
    ]
