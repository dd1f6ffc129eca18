"""The outbox seam: :class:`OutboxStore`, where enqueues wait for their transaction to commit
and what the relay reads."""

from __future__ import annotations

import abc
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import ClassVar

from ultimat3_jobs.drivers.common import WakeSubscription
from ultimat3_jobs.types import EnqueueRequest


class OutboxStore(abc.ABC):
    """Where enqueues wait for their transaction to commit (``x_outbox`` in the caller's own
    database), and what the relay reads. Methods follow the driver's naming and rules; every
    store (``PostgresOutbox``, ``MemoryOutbox``) passes ``tests/drivers/test_outbox_seam.py``.
    Each staged row keeps its job's id, so a row published twice makes one job."""

    name: ClassVar[str] = "outbox"
    stage_visible_in_transaction: ClassVar[bool] = True
    """Whether a claim made inside the staging transaction, on its own connection, sees what it
    staged (PostgreSQL: a transaction sees its own rows). Other connections and threads see
    staged rows only after the commit, on every store."""

    database: str

    @classmethod
    def serves(cls, database: str) -> bool:
        """Whether this store can keep staged rows on the Django alias ``database``."""
        return True

    @abc.abstractmethod
    def outbox_stage_many(self, *, requests: Sequence[EnqueueRequest], notify: bool) -> None:
        """Stage jobs on the caller's connection, inside its transaction on :attr:`database`
        (at once when none is open), one write per :data:`ENQUEUE_CHUNK`: they are claimable
        once it commits, never after a rollback. ``run_at``, or the delay counted from the
        stage, is kept; ``notify`` wakes the relay at commit."""

    @abc.abstractmethod
    def outbox_claim(
        self, *, relay_id: str, limit: int, lease_seconds: float
    ) -> list[EnqueueRequest]:
        """Take up to ``limit`` unpublished rows, oldest staged first, under a lease: rows
        another relay holds are skipped; a row whose lease ended is taken again. A row already
        due comes back with no ``run_at`` (due at publish, which wakes the workers)."""

    @abc.abstractmethod
    def outbox_mark_published(self, *, relay_id: str, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """Mark rows published, fenced by ``relay_id`` (the row's last claimer). Answers the ids
        that were marked; a published row is never claimed again."""

    @abc.abstractmethod
    def outbox_record_failure(
        self, *, relay_id: str, job_id: uuid.UUID, error: str, retry_seconds: float
    ) -> bool:
        """Count a failed publish of one row, keep its error (as :func:`outbox_error_text`
        makes it), retry it after ``retry_seconds``. Fenced like
        :meth:`outbox_mark_published`."""

    @abc.abstractmethod
    def outbox_purge_published(
        self, *, retention_seconds: float, limit: int, before: datetime | None = None
    ) -> int:
        """Delete up to ``limit`` rows published more than ``retention_seconds`` ago (or, when
        ``before`` is given, a purge pass's one clock reading minus its retention, published
        before it); never an unpublished row. Answers how many."""

    @abc.abstractmethod
    def outbox_count_published(self, *, before: datetime, limit: int) -> int:
        """How many rows :meth:`outbox_purge_published` would delete at ``before``, counted up
        to ``limit`` (a dry run)."""

    def wake_subscribe(self, *, on_wake: Callable[[str], None]) -> WakeSubscription | None:
        """Call ``on_wake`` when a staging transaction commits; None when there is no wake."""
        return None

    def reset_connection(self) -> None:  # noqa: B027 -- optional
        """Drop the calling thread's connection after an error."""

    def close(self) -> None:  # noqa: B027 -- optional
        """Release what the store holds."""
