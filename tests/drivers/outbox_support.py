"""Helpers of the outbox parity suite: one store of each kind with the job driver its relay
publishes to, and the per-store controls that move time and read a row's columns."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connections

from tests.drivers.support import HOUR, request, utcnow
from ultimat3_jobs.drivers.base import JobDriver, OutboxStore
from ultimat3_jobs.runtime.relay import Relay, RelayConfig
from ultimat3_jobs.types import EnqueueRequest

RELAY = "relay-a"
OTHER_RELAY = "relay-b"
LEASE = 30.0
FAST_RELAY = {"poll_floor": 0.01, "poll_ceiling": 0.1, "poll_ceiling_wake": 0.2}


class PostgresOutboxControls:
    """Moves an ``x_outbox`` row's times and reads its columns through the ORM."""

    def _rows(self, job_id: uuid.UUID) -> Any:
        from ultimat3_jobs.models import OutboxEntry

        return OutboxEntry.objects.filter(id=job_id)

    def expire_lease(self, job_id: uuid.UUID) -> None:
        assert self._rows(job_id).update(relay_lease_expires_at=utcnow() - HOUR) == 1

    def backdate_published(self, job_id: uuid.UUID, by: timedelta) -> None:
        from django.db.models import F

        rows = self._rows(job_id).filter(published_at__isnull=False)
        assert rows.update(published_at=F("published_at") - by) == 1

    def row(self, job_id: uuid.UUID) -> dict[str, Any] | None:
        found = self._rows(job_id).values(
            "relay_id", "published_at", "publish_attempts", "last_error", "run_at"
        )
        if not found:
            return None
        [row] = found
        row["published"] = row.pop("published_at") is not None
        return dict(row)


class MemoryOutboxControls:
    """The same, through the memory outbox's test-support methods."""

    def __init__(self, outbox: Any) -> None:
        self.outbox = outbox

    def expire_lease(self, job_id: uuid.UUID) -> None:
        self.outbox._set_lease_expires_at(job_id, utcnow() - HOUR)

    def backdate_published(self, job_id: uuid.UUID, by: timedelta) -> None:
        self.outbox._shift_published_at(job_id, -by)

    def row(self, job_id: uuid.UUID) -> dict[str, Any] | None:
        row: dict[str, Any] | None = self.outbox._row(job_id)
        return row


@dataclass
class OutboxCase:
    """One outbox store, the job driver its relay publishes to, and the store's controls."""

    outbox: OutboxStore
    driver: JobDriver
    controls: Any

    def stage(self, *requests: EnqueueRequest, notify: bool = False) -> list[uuid.UUID]:
        self.outbox.outbox_stage_many(requests=requests, notify=notify)
        return [r.id for r in requests]

    def stage_one(self, **overrides: Any) -> uuid.UUID:
        [job_id] = self.stage(request(**overrides))
        return job_id

    def claim(
        self, relay_id: str = RELAY, *, limit: int = 100, lease_seconds: float = LEASE
    ) -> list[EnqueueRequest]:
        return self.outbox.outbox_claim(relay_id=relay_id, limit=limit, lease_seconds=lease_seconds)

    def claim_ids(self, relay_id: str = RELAY, **kwargs: Any) -> list[uuid.UUID]:
        return [r.id for r in self.claim(relay_id, **kwargs)]

    def row(self, job_id: uuid.UUID) -> dict[str, Any]:
        row = self.controls.row(job_id)
        assert row is not None, f"outbox row {job_id} is gone"
        return dict(row)


def build_case(kind: str) -> Iterator[OutboxCase]:
    """The ``outbox`` fixture's body: ``kind`` is ``memory`` or ``postgres``."""
    case: OutboxCase
    if kind == "postgres":
        from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
        from ultimat3_jobs.drivers.postgres.outbox import PostgresOutbox

        pg_outbox = PostgresOutbox(database="default")
        case = OutboxCase(pg_outbox, PostgresDriver(database="default"), PostgresOutboxControls())
    else:
        from ultimat3_jobs.drivers.memory import MemoryDriver
        from ultimat3_jobs.drivers.memory.outbox import MemoryOutbox

        memory_outbox = MemoryOutbox(database="default")
        case = OutboxCase(memory_outbox, MemoryDriver(), MemoryOutboxControls(memory_outbox))
    assert case.outbox.name == kind
    try:
        yield case
    finally:
        case.outbox.close()
        case.driver.close()


def in_thread(action: Callable[[], Any]) -> Any:
    """``action()``'s answer, computed by another thread (its own database connection)."""
    answer: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            answer.append(action())
        except BaseException as exc:  # handed back to the caller
            failure.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    if failure:
        raise failure[0]
    return answer[0]


class RunningRelay:
    """A relay thread over the case's outbox and driver, stopped on exit."""

    def __init__(self, case: OutboxCase, **options: Any) -> None:
        config = RelayConfig(relay_id=f"relay-{uuid.uuid4().hex[:6]}", **{**FAST_RELAY, **options})
        self.relay = Relay(case.outbox, case.driver, config)
        self.thread = threading.Thread(target=self.relay.run, name="jobs-test-relay", daemon=True)

    def __enter__(self) -> Relay:
        self.thread.start()
        assert self.relay.started.wait(10)
        return self.relay

    def __exit__(self, *exc: object) -> None:
        self.relay.request_stop()
        self.thread.join(10)
        assert not self.thread.is_alive()


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    stop = threading.Event()
    deadline = utcnow() + timedelta(seconds=timeout)
    while not check():
        assert utcnow() < deadline, "timed out"
        stop.wait(0.02)


def close_to(moment: datetime | None, expected: datetime, *, seconds: float = 5.0) -> bool:
    return moment is not None and abs((moment - expected).total_seconds()) <= seconds
