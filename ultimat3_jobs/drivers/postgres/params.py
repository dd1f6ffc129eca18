"""The parameters of the statements that write jobs, shared by the driver, the scheduler's fire
and the outbox."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ultimat3_jobs.drivers.base import check_settle_action
from ultimat3_jobs.types import AckItem, EnqueueRequest, SettleItem

WAKE_CHANNEL = "ultimat3_jobs"


_REQUEST_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("id", "id", "ids"),
    ("name", "name", "names"),
    ("queue", "queue", "queues"),
    ("priority", "priority", "priorities"),
    ("run_at", "run_at", "run_ats"),
    ("delay_seconds", "delay_seconds", "delays"),
    ("input_json", "input", "inputs"),
    ("idempotency_key", "idempotency_key", "keys"),
    ("tenant_id", "tenant_id", "tenants"),
    ("enqueued_by", "enqueued_by", "enqueued_bys"),
    ("max_attempts", "max_attempts", "max_attempts"),
    ("lease_seconds", "lease_seconds", "lease_seconds"),
    ("traceparent", "traceparent", "traceparents"),
)
"""Each field of an :class:`EnqueueRequest` a job row is written from: the field, its
parameter for one request, its array parameter for a batch."""


def enqueue_params(request: EnqueueRequest) -> dict[str, Any]:
    """One request as the named parameters of ``job_enqueue`` (and ``scheduler_fire``)."""
    return {one: getattr(request, field) for field, one, _ in _REQUEST_COLUMNS}


def batch_params(chunk: Sequence[EnqueueRequest]) -> dict[str, list[Any]]:
    """A batch of requests as one array parameter per column (``unnest`` in the statement)."""
    return {many: [getattr(r, field) for r in chunk] for field, _, many in _REQUEST_COLUMNS}


def due_now(request: EnqueueRequest) -> bool:
    return request.run_at is None and not request.delay_seconds


def settle_params(items: Sequence[SettleItem]) -> dict[str, list[Any]]:
    """A batch of endings as one array parameter per column of ``job_settle_many``."""
    for item in items:
        check_settle_action(item.action)
    return {
        "ids": [i.job_id for i in items],
        "tokens": [i.claim_token for i in items],
        "actions": [i.action for i in items],
        "results": [i.result_json for i in items],
        "progress": [None if i.action == "drop" else i.progress_json for i in items],
        "errors": [
            None
            if i.error is None or i.action in ("complete", "drop")
            else json.dumps(i.error.as_json())
            for i in items
        ],
        "delays": [max(0.0, float(i.delay_seconds)) for i in items],
        "counts": [bool(i.counts_as_attempt) for i in items],
    }


def ack_params(items: Sequence[AckItem] | Sequence[SettleItem]) -> dict[str, list[Any]]:
    """Completed attempts as the array parameters of ``job_ack_many``."""
    return {
        "ids": [item.job_id for item in items],
        "tokens": [item.claim_token for item in items],
        "results": [item.result_json for item in items],
        "progress": [item.progress_json for item in items],
    }
