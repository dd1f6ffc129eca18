"""Giving attempts back at shutdown: back to ``queued`` at once, not after their lease."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.runtime.common.store import STORE_ERRORS
from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.types import SettleItem

logger = logging.getLogger("ultimat3_jobs.worker")


def release(driver: JobDriver, attempts: Iterable[Attempt]) -> tuple[list[Attempt], int]:
    """Give back, in one statement, every attempt whose settle is still to take: due now, its
    attempt not counted, its body told to stop. Answers the attempts taken (the caller forgets
    them) and how many releases landed; what the store could not take stays leased until the
    rescuer takes it back."""
    taken = [attempt for attempt in attempts if attempt.take_settle()]
    if not taken:
        return taken, 0
    for attempt in taken:
        attempt.lose()
    items = [
        SettleItem(
            job_id=attempt.job.id,
            claim_token=attempt.job.claim_token,
            action="retry",
            counts_as_attempt=False,
        )
        for attempt in taken
    ]
    try:
        return taken, len(driver.job_settle_many(items=items))
    except STORE_ERRORS as exc:
        logger.warning(
            "jobs.worker.release_failed: %s attempts stay leased until rescued (%s)",
            len(taken),
            exc,
        )
        return taken, 0
