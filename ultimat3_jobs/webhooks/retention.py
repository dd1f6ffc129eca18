"""The purge's ``webhooks`` target: rows of the webhook delivery ledger
(``x_webhook_deliveries``, one per attempt) recorded longer ago than
``RETENTION_WEBHOOKS_SECONDS``.

Layer: feature. The target is a :class:`~ultimat3_jobs.factories.purge.PurgeTarget` like the
built-in ones; its deletes and counts go through :mod:`ultimat3_jobs.webhooks.ledger`, the one
place that reads and writes the ledger. The default purge (``ultimat3_jobs/jobs.py``) sweeps it
after the job store's targets.
"""

from __future__ import annotations

from datetime import datetime

from ultimat3_jobs.factories.purge import PurgeTarget
from ultimat3_jobs.factories.retention import setting_target
from ultimat3_jobs.webhooks import ledger

TARGET_NAME = "webhooks"


def webhook_deliveries(*, retention: float | None = None) -> PurgeTarget:
    """Webhook ledger rows recorded longer ago than ``retention`` seconds (else
    ``RETENTION_WEBHOOKS_SECONDS``; ``None`` there keeps them for ever)."""

    def delete(cutoff: datetime, limit: int) -> int:
        return ledger.purge_deliveries(before=cutoff, limit=limit)

    def count(cutoff: datetime, cap: int) -> int:
        return ledger.count_deliveries(before=cutoff, limit=cap)

    return setting_target(
        TARGET_NAME,
        "retention_webhooks_seconds",
        retention=retention,
        delete=delete,
        count=count,
    )
