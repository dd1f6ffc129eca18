"""A settle the database refuses never wedges the settler (design §3.2 R25).

Only a lost connection is retried. A write refused for its data (a value the database cannot
store, a constraint) is isolated: an ack batch is split until the refused row stands alone, the
other rows land once, and the refused attempt is failed with an ``ultimat3_jobs.SettleRefused``
error saying what was refused. The worker goes on settling everything after it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from django.db import connection
from django.db.models import Count

from tests.testapp import jobs
from tests.testapp.models import Effect
from tests.worker import bodies
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.errors import DriverUnavailable, StoreRefused
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.models import Job
from ultimat3_jobs.runtime.common.pool import BodyPool
from ultimat3_jobs.runtime.worker import WorkerConfig
from ultimat3_jobs.runtime.worker.attempt import Attempt, Outcome
from ultimat3_jobs.runtime.worker.settle import Settler
from ultimat3_jobs.types import AttemptError, EnqueueRequest, JobState, new_job_id

CONSTRAINT = "tests_refuses_a_result"
SETTLE_REFUSED = "ultimat3_jobs.SettleRefused"
"""The error class stored for a refused settle: a contract with readers of x_jobs.errors."""


@pytest.fixture
def refusing_results(transactional_db: None) -> Iterator[None]:
    """x_jobs refuses a result holding the key ``refuse_me``, as it would refuse any value it
    cannot store. Dropped again after the test (schema changes outlive its flush)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"alter table x_jobs add constraint {CONSTRAINT} "
            f"check (not coalesce(result ? '{bodies.REFUSED_KEY}', false))"
        )
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"alter table x_jobs drop constraint if exists {CONSTRAINT}")


def _settled(*ids) -> bool:
    return not Job.objects.filter(id__in=ids, state__in=["queued", "running"]).exists()


def _runs(ids) -> dict:
    return dict(
        Effect.objects.filter(job_id__in=ids)
        .values_list("job_id")
        .annotate(n=Count("id"))
        .values_list("job_id", "n")
    )


def test_a_result_the_database_refuses_fails_that_job_alone(refusing_results, make_worker):
    good = [r.id for r in jobs.record.enqueue_many([{"n": n} for n in range(99)])]
    bad = bodies.refused_result.enqueue().id
    # Slow enough acks that many attempts share one batch with the refused one.
    running = make_worker(concurrency=16, ack_flush=0.2)
    wait_for(lambda: _settled(*good, bad), timeout=30, what="all 100 settled")

    rows = {row.id: row for row in Job.objects.filter(id__in=[*good, bad])}
    assert {(rows[i].state, rows[i].attempt) for i in good} == {("completed", 1)}
    assert [rows[i].result for i in good[:3]] == [{"n": n, "attempt": 1} for n in range(3)]
    assert _runs(good) == dict.fromkeys(good, 1), "a good job ran or settled twice"
    refused = rows[bad]
    assert (refused.state, refused.attempt, refused.result) == ("failed", 1, None)
    [error] = refused.errors
    assert error["error_class"] == SETTLE_REFUSED
    assert error["message"].startswith("the database refused to store this attempt's result")
    assert CONSTRAINT in error["message"]
    assert error["message"].endswith("(SQLSTATE 23514)"), "the store's own code, nothing after"
    assert "kept out" not in error["message"], "the database's DETAIL quotes the row"
    assert _runs([bad]) == {bad: 1}, "a refused result is failed, not retried"

    # The worker goes on.
    later = jobs.record.enqueue(n=1000)
    wait_for(lambda: _settled(later.id), timeout=10, what="a job enqueued afterwards")
    assert Job.objects.get(id=later.id).state == "completed"
    assert running.worker.settled_count == 101


def test_an_error_entry_the_database_refuses_is_replaced(make_worker):
    good = [r.id for r in jobs.record.enqueue_many([{"n": n} for n in range(20)])]
    bad = bodies.raises_unstorable.enqueue().id
    make_worker(concurrency=8)
    wait_for(lambda: _settled(*good, bad), timeout=30, what="all 21 settled")

    assert set(Job.objects.filter(id__in=good).values_list("state", flat=True)) == {"completed"}
    refused = Job.objects.get(id=bad)
    assert (refused.state, refused.attempt) == ("failed", 1)
    [error] = refused.errors
    assert error["error_class"] == SETTLE_REFUSED
    assert "refused to store this attempt's error entry" in error["message"]
    # What could be kept of the body's own error is kept, made storable.
    assert "RemoteFault[Unstorable\\x00Name]" in error["message"]
    assert "the class name is not" in error["message"]
    assert "Traceback (most recent call last)" in error["traceback"]
    later = jobs.record.enqueue(n=1000)
    wait_for(lambda: _settled(later.id), timeout=10, what="a job enqueued afterwards")


# -- the settler alone, on a store that refuses -----------------------------------------------


class RefusingStore(MemoryDriver):
    """A memory store that refuses, with the seam's errors as the PostgreSQL driver would, a
    result holding ``refuse_me`` and an error entry of class ``app.Unstorable``; and loses its
    connection ``drops`` times first."""

    def __init__(self, *, drops: int = 0) -> None:
        super().__init__()
        self.drops = drops
        self.settle_writes = 0

    def _maybe_drop(self) -> None:
        if self.drops > 0:
            self.drops -= 1
            raise DriverUnavailable("OperationalError: server closed the connection unexpectedly")

    def job_settle_many(self, *, items):
        self.settle_writes += 1
        self._maybe_drop()
        if any(
            item.action == "complete" and bodies.REFUSED_KEY in item.result_json for item in items
        ):
            reason = f'IntegrityError: violates check constraint "{CONSTRAINT}"'
            raise StoreRefused(reason=reason, sqlstate="23514")
        if any(
            item.error is not None and item.error.error_class == "app.Unstorable" for item in items
        ):
            raise StoreRefused(reason="ProgrammingError: the store cannot hold this error entry")
        return super().job_settle_many(items=items)


def _claimed(store: MemoryDriver, count: int) -> list[Attempt]:
    for _ in range(count):
        store.job_enqueue(
            request=EnqueueRequest(
                id=new_job_id(), name="tests.echo", queue="default", input_json="{}"
            )
        )
    claimed = store.job_claim(queues=["default"], limit=count, worker_id="w", lease_seconds=60)
    return [
        Attempt(job=job, definition=None, ctx=JobContext(job_id=job.id, name=job.name))
        for job in claimed
    ]


def _settle(store: MemoryDriver, outcomes: list[Outcome]) -> dict:
    """Run a settler over ``outcomes``; answer how each attempt was done, failing (never
    hanging) when the settler does not finish."""
    done: dict = {}
    finished = threading.Event()

    def on_done(attempt: Attempt, how: str) -> None:
        done[attempt.job.id] = how
        if len(done) == len(outcomes):
            finished.set()

    config = WorkerConfig(queues=("default",), concurrency=4, ack_flush=0.05)
    hooks = BodyPool(1, name="test-hooks")
    settler = Settler(driver=store, config=config, on_done=on_done, hooks=hooks)
    for outcome in outcomes:  # queued before it starts: one flush takes them all
        settler.put(outcome)
    settler.start()
    try:
        assert finished.wait(10), f"the settler wedged: {len(done)} of {len(outcomes)} done"
    finally:
        settler.stop(timeout=5)
        hooks.shutdown(timeout=1)
    assert not settler.is_alive()
    return done


def test_a_refused_ack_is_isolated_by_halves_and_never_retried_as_is() -> None:
    store = RefusingStore()
    attempts = _claimed(store, 64)
    outcomes = [
        Outcome(a, "completed", result_json='{"refuse_me":1}' if i == 37 else f'{{"i":{i}}}')
        for i, a in enumerate(attempts)
    ]
    done = _settle(store, outcomes)
    assert set(done) == {a.job.id for a in attempts}
    states = [store.job_get(job_id=a.job.id).state for a in attempts]
    assert states.count(JobState.COMPLETED) == 63
    refused = store.job_get(job_id=attempts[37].job.id)
    assert refused.state == JobState.FAILED
    assert refused.errors[0]["error_class"] == SETTLE_REFUSED
    assert refused.errors[0]["message"].endswith(f'"{CONSTRAINT}" (SQLSTATE 23514)')
    # One batch, split in halves down to the refused row: about 2 writes per level, not forever.
    assert store.settle_writes <= 2 * 6 + 1 + 1, store.settle_writes


def test_a_refused_nack_is_written_once_more_with_a_storable_error() -> None:
    store = RefusingStore()
    [attempt] = _claimed(store, 1)
    error = AttemptError(attempt=1, error_class="app.Unstorable", message="m", traceback="tb")
    done = _settle(store, [Outcome(attempt, "failed", error=error, terminal=True)])
    assert done == {attempt.job.id: "fail"}
    assert store.settle_writes == 2
    record = store.job_get(job_id=attempt.job.id)
    assert record.state == JobState.FAILED
    assert record.errors[0]["error_class"] == SETTLE_REFUSED
    assert "app.Unstorable: m" in record.errors[0]["message"]


def test_a_lost_connection_is_still_retried_until_the_write_lands() -> None:
    store = RefusingStore(drops=2)
    attempts = _claimed(store, 3)
    done = _settle(store, [Outcome(a, "completed", result_json="1") for a in attempts])
    assert set(done.values()) == {"completed"}
    assert store.settle_writes == 3  # two lost connections, then the write
    assert {store.job_get(job_id=a.job.id).state for a in attempts} == {JobState.COMPLETED}


def test_a_flush_of_mixed_endings_is_one_write() -> None:
    store = RefusingStore()
    attempts = _claimed(store, 8)
    error = AttemptError(attempt=1, error_class="app.Failed", message="m", traceback="tb")
    outcomes = [
        Outcome(a, "completed", result_json="1") if i % 2 else Outcome(a, "failed", error=error)
        for i, a in enumerate(attempts)
    ]
    done = _settle(store, outcomes)
    assert sorted(done.values()) == ["completed"] * 4 + ["retry"] * 4
    assert store.settle_writes == 1
    states = [store.job_get(job_id=a.job.id).state for a in attempts]
    assert states == [JobState.QUEUED, JobState.COMPLETED] * 4
