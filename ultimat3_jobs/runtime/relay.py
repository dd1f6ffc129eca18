"""``Relay``: claim staged rows under a lease, publish them in two statements, mark them.

A batch is published with one ``job_enqueue_many`` (each job keeps its staged id, so a row
published twice is answered ``deduped``) and marked with one statement. When a batch fails, its
rows go one at a time, in order; a row that still fails is kept, its error recorded, and tried
again after a pause. The relay wakes on the staging transaction's NOTIFY, polls as the guarantee
with the worker's idle backoff, and stops in two phases like the worker. It deletes nothing:
published rows past ``OUTBOX_RETENTION_SECONDS`` are the ``outbox`` target of the purge
(:mod:`ultimat3_jobs.factories.retention`), the one caller of every retention delete.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import ultimat3_jobs.conf as conf
from ultimat3_jobs.drivers.base import JobDriver, OutboxStore, WakeSubscription
from ultimat3_jobs.runtime.common.backoff import IdleBackoff, PollTimes
from ultimat3_jobs.runtime.common.config import FieldSource
from ultimat3_jobs.runtime.common.ids import default_worker_id
from ultimat3_jobs.runtime.common.service import Service
from ultimat3_jobs.runtime.common.store import STORE_ERRORS, STORE_UNREACHABLE
from ultimat3_jobs.types import EnqueueRequest

logger = logging.getLogger("ultimat3_jobs.relay")

FAILED_ROW_RETRY_SECONDS = 30.0
STORE_RETRY_CEILING_SECONDS = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RelayConfig(PollTimes):
    """What one relay does. Times are in seconds."""

    relay_id: str = field(default_factory=lambda: f"relay:{default_worker_id()}")
    batch_size: int = conf.RELAY_BATCH_SIZE_DEFAULT
    lease_seconds: float = conf.RELAY_LEASE_SECONDS_DEFAULT

    SETTINGS: ClassVar[Mapping[str, FieldSource]] = {
        **PollTimes.SETTINGS,
        "batch_size": "relay_batch_size",
        "lease_seconds": "relay_lease_seconds",
    }


class Relay(Service[RelayConfig]):
    """Publishes staged jobs until stopped. Tests wait on ``started``, ``idle``, ``published``
    (a batch landed) and ``stopped``."""

    def __init__(self, outbox: OutboxStore, driver: JobDriver, config: RelayConfig) -> None:
        super().__init__(driver, config)
        self.outbox = outbox
        self.idle = threading.Event()
        self.published = threading.Event()
        self.published_count = 0
        self._signal = threading.Event()
        self._running = True
        self._wake: WakeSubscription | None = None
        self._backoff = IdleBackoff.of(config)

    def request_stop(self, *, reason: str = "stop requested") -> None:
        """Stop claiming; the batch in hand is published first. A relay holds no work between
        batches, so one request is enough (a row it claimed and did not publish is taken again
        by any relay once its lease ends)."""
        if self._running:
            logger.info("jobs.relay.stopping: %s", reason)
        self._running = False
        self._signal.set()

    @property
    def wake_live(self) -> bool:
        return self._wake is not None and self._wake.is_live()

    def _open(self) -> None:
        if self.config.use_wake:
            self._wake = self.outbox.wake_subscribe(on_wake=self._on_wake)
        logger.info("jobs.relay.started: %s", self.config.relay_id)

    def _serve(self) -> None:
        store_wait = self.config.poll_floor
        while self._running:
            self._signal.clear()
            try:
                rows = self.outbox.outbox_claim(
                    relay_id=self.config.relay_id,
                    limit=self.config.batch_size,
                    lease_seconds=self.config.lease_seconds,
                )
                if rows:
                    self._publish(rows)
                store_wait = self.config.poll_floor
            except STORE_ERRORS as exc:
                logger.warning("jobs.relay.store_failed: %s; retrying", exc)
                self.outbox.reset_connection()
                self.driver.reset_connection()
                store_wait = min(store_wait * 2, STORE_RETRY_CEILING_SECONDS)
                self._signal.wait(store_wait)
                continue
            if len(rows) == self.config.batch_size:
                continue  # more may be waiting
            if rows:
                self._backoff.reset()
            self.idle.set()
            self._signal.wait(self._backoff.next(wake_live=self.wake_live))

    def _close(self) -> None:
        if self._wake is not None:
            self._wake.close()
        logger.info(
            "jobs.relay.stopped: %s; %s published", self.config.relay_id, self.published_count
        )

    def _publish(self, rows: list[EnqueueRequest]) -> None:
        relay_id = self.config.relay_id
        try:
            self.driver.job_enqueue_many(requests=rows)
            marked = self.outbox.outbox_mark_published(relay_id=relay_id, ids=[r.id for r in rows])
        except STORE_UNREACHABLE:
            raise
        except Exception as exc:  # a batch the store refused: go row by row, in order
            logger.warning("jobs.relay.batch_failed: %s; publishing one row at a time", exc)
            self.driver.reset_connection()
            marked = set()
            for row in rows:
                marked |= self._publish_one(row)
        self.published_count += len(marked)
        if marked:
            self.published.set()

    def _publish_one(self, row: EnqueueRequest) -> set[Any]:
        relay_id = self.config.relay_id
        try:
            self.driver.job_enqueue(request=row)
        except STORE_UNREACHABLE:
            raise
        except Exception as exc:
            logger.error(
                "jobs.relay.row_failed: %s %s would not publish: %s", row.name, row.id, exc
            )
            self.outbox.outbox_record_failure(
                relay_id=relay_id,
                job_id=row.id,
                error=f"{type(exc).__name__}: {exc}",
                retry_seconds=FAILED_ROW_RETRY_SECONDS,
            )
            return set()
        return self.outbox.outbox_mark_published(relay_id=relay_id, ids=[row.id])

    def _on_wake(self, _: str) -> None:
        self._backoff.reset()
        self._signal.set()
