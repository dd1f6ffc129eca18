"""The parameters of the statements that write jobs, shared by the driver, the scheduler's fire
and the outbox."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ultimat3_jobs.types import EnqueueRequest

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
