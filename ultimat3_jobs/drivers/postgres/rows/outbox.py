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
    "input_json",
    "idempotency_key",
    "tenant_id",
    "enqueued_by",
    "max_attempts",
    "lease_seconds",
    "traceparent",
)
"""The columns ``outbox_claim`` answers a staged job with, named as :class:`EnqueueRequest`'s
fields they fill."""


def claimed_requests(result: Result) -> list[EnqueueRequest]:
    """``outbox_claim``'s rows as requests, oldest staged first."""
    order = result.picker("created_at", "id")
    pick = result.picker(*STAGED)
    requests = []
    for row in sorted(result.rows, key=order):
        staged = dict(zip(STAGED, pick(row), strict=True))
        staged["id"] = as_uuid(staged["id"])
        requests.append(EnqueueRequest(**staged))
    return requests
