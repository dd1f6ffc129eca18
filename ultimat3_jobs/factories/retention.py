"""The built-in purge targets, each with its own retention setting, and the default purge.

Layer: factories. Each target reads its retention from the settings when a pass starts (so a
changed setting applies to the next pass) and deletes through the seam's retention methods
(``drivers/retention_seam.py``) or the outbox store's:

========================  ================================  =================================
target                    rows                              retention setting
========================  ================================  =================================
``jobs.completed``        completed jobs, by ``finished_at``  ``RETENTION_COMPLETED_SECONDS``
``jobs.failed``           failed jobs (dead letters)        ``RETENTION_FAILED_SECONDS``
``jobs.cancelled``        cancelled jobs                    ``RETENTION_CANCELLED_SECONDS``
``outbox``                published outbox rows             ``OUTBOX_RETENTION_SECONDS``
``events``                events past their expiry          ``RETENTION_EVENTS_SECONDS``
``counters``              settle counters, by bucket        ``RETENTION_COUNTERS_SECONDS``
========================  ================================  =================================

A job's steps go with the job (``on delete cascade``). ``None`` keeps rows for ever. The webhook
delivery ledger's target, ``webhooks`` (``RETENTION_WEBHOOKS_SECONDS``), lives with its table in
:mod:`ultimat3_jobs.webhooks.retention`; the default purge sweeps it last.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver, get_outbox
from ultimat3_jobs.factories.purge import PurgeTarget
from ultimat3_jobs.types import JobState

DEFAULT_PURGE_NAME = "ultimat3_jobs.purge"
"""The purge declared by ``ultimat3_jobs/jobs.py`` on ``PURGE_CRON`` over every built-in target."""


def setting_target(
    name: str,
    attribute: str,
    *,
    retention: float | None,
    delete: Callable[[datetime, int], int],
    count: Callable[[datetime, int], int],
) -> PurgeTarget:
    """A target that keeps ``retention`` seconds when given in code, else the setting
    ``attribute`` (read when a pass starts, so a changed setting applies to the next pass)."""

    def keep() -> float | None:
        if retention is not None:
            return float(retention)
        value: float | None = getattr(get_settings(), attribute)
        return value

    setting = "" if retention is not None else attribute.upper()
    return PurgeTarget(name=name, retention=keep, delete=delete, count=count, setting=setting)


def finished_jobs(state: JobState | str, *, retention: float | None = None) -> PurgeTarget:
    """Jobs finished in ``state`` (``completed``, ``failed`` or ``cancelled``) longer ago than
    ``retention`` seconds (else the state's ``RETENTION_*_SECONDS``), with their steps."""
    found = JobState(state)
    key = f"retention_{found.value}_seconds"

    def delete(cutoff: datetime, limit: int) -> int:
        return get_driver().job_purge_finished(state=found, before=cutoff, limit=limit)

    def count(cutoff: datetime, cap: int) -> int:
        return get_driver().job_count_finished(state=found, before=cutoff, limit=cap)

    return setting_target(
        f"jobs.{found.value}", key, retention=retention, delete=delete, count=count
    )


def published_outbox(*, retention: float | None = None) -> PurgeTarget:
    """Outbox rows published longer ago than ``OUTBOX_RETENTION_SECONDS``."""

    def delete(cutoff: datetime, limit: int) -> int:
        return get_outbox().outbox_purge_published(
            retention_seconds=0.0, limit=limit, before=cutoff
        )

    def count(cutoff: datetime, cap: int) -> int:
        return get_outbox().outbox_count_published(before=cutoff, limit=cap)

    return setting_target(
        "outbox", "outbox_retention_seconds", retention=retention, delete=delete, count=count
    )


def expired_events(*, retention: float | None = None) -> PurgeTarget:
    """Events that expired longer ago than ``RETENTION_EVENTS_SECONDS`` (0: once expired)."""

    def delete(cutoff: datetime, limit: int) -> int:
        return get_driver().events_purge_expired(limit=limit, before=cutoff)

    def count(cutoff: datetime, cap: int) -> int:
        return get_driver().event_count_expired(before=cutoff, limit=cap)

    return setting_target(
        "events", "retention_events_seconds", retention=retention, delete=delete, count=count
    )


def old_counters(*, retention: float | None = None) -> PurgeTarget:
    """Settle-counter rows (minute rows the rollup has not folded, and hour rows) whose bucket
    is older than ``RETENTION_COUNTERS_SECONDS``."""

    def delete(cutoff: datetime, limit: int) -> int:
        return get_driver().counter_purge(before=cutoff, limit=limit)

    def count(cutoff: datetime, cap: int) -> int:
        return get_driver().counter_count(before=cutoff, limit=cap)

    return setting_target(
        "counters", "retention_counters_seconds", retention=retention, delete=delete, count=count
    )


def default_targets() -> list[PurgeTarget]:
    """Every built-in target of the job store, each on its setting (the default purge adds the
    webhook ledger's, :func:`ultimat3_jobs.webhooks.retention.webhook_deliveries`)."""
    return [
        finished_jobs(JobState.COMPLETED),
        finished_jobs(JobState.FAILED),
        finished_jobs(JobState.CANCELLED),
        published_outbox(),
        expired_events(),
        old_counters(),
    ]
