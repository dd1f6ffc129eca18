"""Rows of the outbox's statements (``sql/outbox.sql``) by column name."""

from __future__ import annotations

from ultimat3_jobs.drivers.postgres.rows.result import Result, as_uuid
from ultimat3_jobs.types import EnqueueRequest

STAGED = (
    "id",
    "name",
    "queue",
    "priority",
    "run_at",
    "input",
    "idempotency_key",
    "tenant_id",
    "enqueued_by",
    "max_attempts",
    "lease_seconds",
    "traceparent",
)


def claimed_requests(result: Result) -> list[EnqueueRequest]:
    """``outbox_claim``'s rows as requests, oldest staged first."""
    order = result.picker("created_at", "id")
    pick = result.picker(*STAGED)
    return [
        EnqueueRequest(
            id=as_uuid(id_),
            name=name,
            queue=queue,
            priority=priority,
            run_at=run_at,
            input_json=input_json,
            idempotency_key=key,
            tenant_id=tenant_id,
            enqueued_by=enqueued_by,
            max_attempts=max_attempts,
            lease_seconds=lease_seconds,
            traceparent=traceparent,
        )
        for (
            id_,
            name,
            queue,
            priority,
            run_at,
            input_json,
            key,
            tenant_id,
            enqueued_by,
            max_attempts,
            lease_seconds,
            traceparent,
        ) in map(pick, sorted(result.rows, key=order))
    ]
