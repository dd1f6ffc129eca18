"""The parameters of the statements that write jobs, shared by the driver, the scheduler's fire
and the outbox."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ultimat3_jobs.drivers.base import check_settle_action
from ultimat3_jobs.types import AckItem, EnqueueRequest, SettleItem

WAKE_CHANNEL = "ultimat3_jobs"


def enqueue_params(request: EnqueueRequest) -> dict[str, Any]:
    """One request as the named parameters of ``job_enqueue`` (and ``scheduler_fire``)."""
    return {
        "id": request.id,
        "name": request.name,
        "queue": request.queue,
        "priority": request.priority,
        "run_at": request.run_at,
        "delay_seconds": request.delay_seconds,
        "input": request.input_json,
        "idempotency_key": request.idempotency_key,
        "tenant_id": request.tenant_id,
        "enqueued_by": request.enqueued_by,
        "max_attempts": request.max_attempts,
        "lease_seconds": request.lease_seconds,
        "traceparent": request.traceparent,
    }


def batch_params(chunk: Sequence[EnqueueRequest]) -> dict[str, list[Any]]:
    """A batch of requests as one array parameter per column (``unnest`` in the statement)."""
    return {
        "ids": [r.id for r in chunk],
        "names": [r.name for r in chunk],
        "queues": [r.queue for r in chunk],
        "priorities": [r.priority for r in chunk],
        "run_ats": [r.run_at for r in chunk],
        "delays": [r.delay_seconds for r in chunk],
        "inputs": [r.input_json for r in chunk],
        "keys": [r.idempotency_key for r in chunk],
        "tenants": [r.tenant_id for r in chunk],
        "enqueued_bys": [r.enqueued_by for r in chunk],
        "max_attempts": [r.max_attempts for r in chunk],
        "lease_seconds": [r.lease_seconds for r in chunk],
        "traceparents": [r.traceparent for r in chunk],
    }


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
