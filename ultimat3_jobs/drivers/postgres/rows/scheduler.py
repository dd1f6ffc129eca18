"""Rows of the scheduler's statements (``sql/scheduler.sql``) by column name."""

from __future__ import annotations

from ultimat3_jobs.drivers.postgres.rows.result import Result, as_uuid
from ultimat3_jobs.types import CronState, FireResult, Leadership


def leadership(result: Result) -> Leadership | None:
    """``leader_attempt_elect``'s row, or ``None`` when another holder leads."""
    row = result.first("epoch", "expires_at", "store_now")
    if row is None:
        return None
    epoch, expires_at, store_now = row
    return Leadership(epoch=int(epoch), expires_at=expires_at, store_now=store_now)


def fire_result(result: Result) -> FireResult:
    """``scheduler_fire``'s one row: whether the watermark moved, and the job it enqueued."""
    moved, job_id = result.first("moved", "job_id") or (0, None)
    return FireResult(moved=bool(moved), job_id=as_uuid(job_id) if job_id else None)


def cron_states(result: Result) -> dict[str, CronState]:
    """``scheduler_cron_sync``'s rows by cron name."""
    return {
        name: CronState(
            name=name,
            watermark=watermark,
            last_fire_at=last_fire_at,
            last_job_id=as_uuid(last_job_id) if last_job_id else None,
        )
        for name, watermark, last_fire_at, last_job_id in result.picked(
            "name", "watermark", "last_fire_at", "last_job_id"
        )
    }
