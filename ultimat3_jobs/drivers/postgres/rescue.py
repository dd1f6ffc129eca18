"""The rescue of expired attempts on PostgreSQL: scan, let the worker's policy decide, apply.

Two statements per sweep (and none while no lease has ended): ``job_rescue_expired_scan`` reads
what the policy needs, ``job_rescue_expired`` writes the decisions as arrays, re-checking each
row under its lock. ``job_mark_pending_many`` records bodies still waiting for a thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from ultimat3_jobs.drivers.postgres.rows import jobs as job_rows
from ultimat3_jobs.drivers.postgres.rows.result import fetch
from ultimat3_jobs.models import RawStatementManager
from ultimat3_jobs.types import ExpiredAttempt, FailureDecision, RescuedJob


def rescue_expired(
    jobs: RawStatementManager,
    *,
    decide: Callable[[ExpiredAttempt], FailureDecision],
    limit: int,
) -> list[RescuedJob]:
    if limit <= 0:
        return []
    expired = job_rows.expired_attempts(fetch(jobs, "job_rescue_expired_scan", {"limit": limit}))
    if not expired:
        return []
    decisions = [decide(attempt) for attempt in expired]
    result = fetch(
        jobs,
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
    rescued = job_rows.rescued_jobs(result)
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
    result = fetch(
        jobs,
        "job_mark_pending_many",
        {
            "ids": [job_id for job_id, _ in attempts],
            "tokens": [token for _, token in attempts],
            "pending": pending,
        },
    )
    return job_rows.ids(result)
