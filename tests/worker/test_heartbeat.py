"""The maintenance thread's heartbeat, on the memory store: it renews every lease the worker
still holds (attempts waiting for their ack included), stores the progress bodies left, keeps a
busy row's progress for a later beat, and stops only attempts that were really lost."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.policy import rescue_policy
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.runtime.worker import WorkerConfig
from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.runtime.worker.maintenance import Maintenance, Tended
from ultimat3_jobs.types import EnqueueRequest, Heartbeat, new_job_id

LEASE = 60.0


class BusyStore(MemoryDriver):
    """A memory store where some rows are held by another transaction, as PostgreSQL rows
    locked by a body's own transaction are: the heartbeat skips them and answers them busy."""

    def __init__(self) -> None:
        super().__init__()
        self.held: set = set()
        self.beats: list[dict] = []

    def job_heartbeat_many(self, *, attempts, lease_seconds, progress=None):
        self.beats.append(dict(progress or {}))
        free = [(job_id, token) for job_id, token in attempts if job_id not in self.held]
        given = {k: v for k, v in (progress or {}).items() if k not in self.held}
        beat = super().job_heartbeat_many(
            attempts=free, lease_seconds=lease_seconds, progress=given
        )
        owned = {job_id for job_id, _ in attempts if job_id in self.held}
        return Heartbeat(renewed=beat.renewed, busy=frozenset(owned))


def _attempts(store: MemoryDriver, count: int) -> list[Attempt]:
    for _ in range(count):
        store.job_enqueue(
            request=EnqueueRequest(
                id=new_job_id(), name="tests.echo", queue="default", input_json="{}"
            )
        )
    claimed = store.job_claim(queues=["default"], limit=count, worker_id="w", lease_seconds=5)
    return [
        Attempt(job=job, definition=None, ctx=JobContext(job_id=job.id, name=job.name))
        for job in claimed
    ]


def _maintenance(store: MemoryDriver, attempts: list[Attempt]) -> Maintenance:
    config = WorkerConfig(queues=("default",), concurrency=4, lease_seconds=LEASE)
    worker = Tended(
        running=lambda: list(attempts),
        on_dead=lambda job: None,
        on_timeout=lambda attempt: None,
        decide=rescue_policy(Registry()),
        is_draining=lambda: False,
    )
    return Maintenance(driver=store, config=config, worker=worker)


def _lease_left(store: MemoryDriver, attempt: Attempt) -> float:
    record = store.job_get(job_id=attempt.job.id)
    return (record.lease_expires_at - datetime.now(UTC)) / timedelta(seconds=1)


def test_an_attempt_waiting_for_its_ack_keeps_its_lease() -> None:
    store = MemoryDriver()
    running, awaiting_ack = _attempts(store, 2)
    assert awaiting_ack.take_settle()  # its body returned; the settler has not written it yet
    _maintenance(store, [running, awaiting_ack]).heartbeat()
    assert _lease_left(store, running) > LEASE - 5
    assert _lease_left(store, awaiting_ack) > LEASE - 5, "an attempt awaiting its ack was dropped"
    assert not awaiting_ack.lost and not awaiting_ack.ctx.cancelled.is_set()


def test_the_heartbeat_stores_the_progress_bodies_left() -> None:
    store = BusyStore()
    [attempt] = _attempts(store, 1)
    attempt.set_progress('{"current":2,"total":5}')
    maintenance = _maintenance(store, [attempt])
    maintenance.heartbeat()
    assert store.job_get(job_id=attempt.job.id).progress == {"current": 2, "total": 5}
    assert attempt.pending_progress is None
    maintenance.heartbeat()
    assert store.beats[-1] == {}, "a stored progress is not written again"


def test_a_busy_row_is_not_lost_and_keeps_its_progress_for_a_later_beat() -> None:
    store = BusyStore()
    busy, free, lost = _attempts(store, 3)
    store.held.add(busy.job.id)
    assert store.job_cancel(job_id=lost.job.id)
    busy.set_progress('{"current":1}')
    maintenance = _maintenance(store, [busy, free, lost])
    maintenance.heartbeat()
    assert not busy.lost and not busy.ctx.cancelled.is_set(), "busy is not lost"
    assert lost.lost and lost.ctx.cancelled.is_set()
    assert not free.lost
    assert busy.pending_progress == '{"current":1}', "not stored yet: kept for the next beat"
    assert store.job_get(job_id=busy.job.id).progress is None

    store.held.clear()
    maintenance.heartbeat()
    assert busy.pending_progress is None
    assert store.job_get(job_id=busy.job.id).progress == {"current": 1}


def test_a_newer_progress_is_never_overwritten_by_one_that_did_not_land() -> None:
    store = BusyStore()
    [attempt] = _attempts(store, 1)
    attempt.set_progress('"old"')
    taken = attempt.take_progress()
    attempt.set_progress('"new"')
    attempt.untake_progress(taken)
    assert attempt.pending_progress == '"new"'
