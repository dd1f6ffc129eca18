"""``PostgresOutbox``: ``x_outbox`` in the caller's own PostgreSQL database.

Staging runs on Django's connection for that alias, so a staged job commits or rolls back with
the caller's transaction; the relay claims, publishes and marks through the same statements.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

from django.db import DatabaseError, connections

from ultimat3_jobs.drivers.base import (
    ENQUEUE_CHUNK,
    OutboxStore,
    WakeSubscription,
    outbox_error_text,
)
from ultimat3_jobs.drivers.postgres.listen import QueueListener
from ultimat3_jobs.drivers.postgres.params import batch_params
from ultimat3_jobs.drivers.postgres.rows import jobs as job_rows
from ultimat3_jobs.drivers.postgres.rows import operator as operator_rows
from ultimat3_jobs.drivers.postgres.rows import outbox as outbox_rows
from ultimat3_jobs.drivers.postgres.rows.result import fetch
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.drivers.postgres.wake import WakeThrottle
from ultimat3_jobs.models import OutboxEntry
from ultimat3_jobs.types import EnqueueRequest

OUTBOX_CHANNEL = "ultimat3_jobs_outbox"
_STAGE_SLOT = "outbox"


@speaks_seam_errors
class PostgresOutbox(OutboxStore):
    """The outbox on the PostgreSQL database of a Django alias; raises the seam's errors, never
    the database's."""

    name = "postgres"

    def __init__(self, *, database: str = "default") -> None:
        self.database = database
        self._rows = OutboxEntry.objects.db_manager(database)
        self._throttle = WakeThrottle()
        self._listeners: list[QueueListener] = []
        self._lock = threading.Lock()

    @classmethod
    def serves(cls, database: str) -> bool:
        """Only a PostgreSQL database holds ``x_outbox`` (read from its ENGINE, no connection)."""
        return bool(connections[database].vendor == "postgresql")

    def outbox_stage_many(self, *, requests: Sequence[EnqueueRequest], notify: bool) -> None:
        for start in range(0, len(requests), ENQUEUE_CHUNK):
            chunk = requests[start : start + ENQUEUE_CHUNK]
            self._rows.run(
                "outbox_stage_many",
                {
                    **batch_params(chunk),
                    "notify": notify and bool(self._wake_for_statement()),
                },
            )

    def _wake_for_statement(self) -> list[str]:
        return self._throttle.for_statement(
            self._rows, [_STAGE_SLOT], channel=OUTBOX_CHANNEL, payload=""
        )

    def outbox_claim(
        self, *, relay_id: str, limit: int, lease_seconds: float
    ) -> list[EnqueueRequest]:
        params = {"relay_id": relay_id, "limit": limit, "lease_seconds": float(lease_seconds)}
        return outbox_rows.claimed_requests(fetch(self._rows, "outbox_claim", params))

    def outbox_mark_published(self, *, relay_id: str, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        if not ids:
            return set()
        params = {"relay_id": relay_id, "ids": list(ids)}
        return job_rows.ids(fetch(self._rows, "outbox_mark_published", params))

    def outbox_record_failure(
        self, *, relay_id: str, job_id: uuid.UUID, error: str, retry_seconds: float
    ) -> bool:
        params = {
            "relay_id": relay_id,
            "id": job_id,
            "error": outbox_error_text(error),
            "retry_seconds": float(retry_seconds),
        }
        return bool(self._rows.run("outbox_record_failure", params))

    def outbox_purge_published(
        self, *, retention_seconds: float, limit: int, before: datetime | None = None
    ) -> int:
        params = {"retention_seconds": float(retention_seconds), "limit": limit, "before": before}
        return operator_rows.count(fetch(self._rows, "outbox_purge_published", params))

    def outbox_count_published(self, *, before: datetime, limit: int) -> int:
        params = {"before": before, "limit": int(limit)}
        return operator_rows.count(fetch(self._rows, "outbox_count_published", params))

    def wake_subscribe(self, *, on_wake: Callable[[str], None]) -> WakeSubscription | None:
        listener = QueueListener(database=self._rows.db, channel=OUTBOX_CHANNEL, on_wake=on_wake)
        with self._lock:
            self._listeners.append(listener)
        listener.start()
        return listener

    def reset_connection(self) -> None:
        with contextlib.suppress(DatabaseError):
            connections[self._rows.db].close()

    def close(self) -> None:
        with self._lock:
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener.close()
