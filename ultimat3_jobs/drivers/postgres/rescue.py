"""The rescue of expired attempts on PostgreSQL: scan, let the worker's policy decide, apply.

Two statements per sweep (and none while no lease has ended): ``job_rescue_expired_scan`` reads
what the policy needs, ``job_rescue_expired`` writes the decisions as arrays, re-checking each
row under its lock. ``job_mark_pending_many`` records bodies still waiting for a thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ultimat3_jobs.models import RawStatementManager
from ultimat3_jobs.types import ExpiredAttempt, FailureDecision, RescuedJob


def _as_uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def rescue_expired(
    jobs: RawStatementManager,
    *,
    decide: Callable[[ExpiredAttempt], FailureDecision],
    limit: int,
) -> list[RescuedJob]:
    if limit <= 0:
        return []
    expired = [
        ExpiredAttempt(
            id=_as_uuid(row[0]),
            claim_token=_as_uuid(row[1]),
            name=row[2],
            attempt=row[3],
            max_attempts=row[4],
            started=not row[5],
        )
        for row in jobs.run("job_rescue_expired_scan", {"limit": limit})
    ]
    if not expired:
        return []
    decisions = [decide(attempt) for attempt in expired]
    rows = jobs.run(
        "job_rescue_expired",
        {
            "ids": [attempt.id for attempt in expired],
            "tokens": [attempt.claim_token for attempt in expired],
            "actions": [decision.action for decision in decisions],
            "delays": [float(decision.delay_seconds) for decision in decisions],
            "counts": [decision.counts_as_attempt for decision in decisions],
        },
    )
    order = {attempt.id: index for index, attempt in enumerate(expired)}
    rescued = [
        RescuedJob(id=_as_uuid(row[0]), name=row[1], action=row[2], attempt=row[3]) for row in rows
    ]
    rescued.sort(key=lambda job: order[job.id])
    return rescued


def mark_pending(
    jobs: RawStatementManager,
    *,
    attempts: Sequence[tuple[uuid.UUID, uuid.UUID]],
    pending: bool,
) -> set[uuid.UUID]:
    if not attempts:
        return set()
    rows = jobs.run(
        "job_mark_pending_many",
        {
            "ids": [job_id for job_id, _ in attempts],
            "tokens": [token for _, token in attempts],
            "pending": pending,
        },
    )
    return {_as_uuid(row[0]) for row in rows}
