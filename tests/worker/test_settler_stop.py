"""A stopping settler settles what is queued and ends at once, whatever the order in which its
queue holds the endings and the stop.

A worker's shutdown waits for its settler (``Settler.stop``): a settler that missed its stop
held every stopping worker for the whole of that wait, an idle one included.
"""

from __future__ import annotations

import threading
import time

from tests.worker.test_settle_refused import _claimed
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.runtime.common.pool import BodyPool
from ultimat3_jobs.runtime.worker import WorkerConfig
from ultimat3_jobs.runtime.worker.attempt import Attempt, Outcome
from ultimat3_jobs.runtime.worker.settle import ACK_BATCH_MAX, Settler
from ultimat3_jobs.types import JobState

STOP_BOUND_SECONDS = 5.0
"""A generous bound on a stop that has one in-memory write left to do: a correctness check."""


class HeldStore(MemoryDriver):
    """Holds its first settle write until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = threading.Event()
        self.release = threading.Event()

    def job_settle_many(self, *, items):
        if not self.writing.is_set():
            self.writing.set()
            assert self.release.wait(10)
        return super().job_settle_many(items=items)


def _started(
    store: MemoryDriver, *, ack_flush: float
) -> tuple[Settler, BodyPool, list[tuple[Attempt, str]]]:
    """A running settler over ``store``, its hook pool and the list of what it has done."""
    done: list[tuple[Attempt, str]] = []
    hooks = BodyPool(1, name="test-hooks")
    settler = Settler(
        driver=store,
        config=WorkerConfig(queues=("default",), concurrency=2, ack_flush=ack_flush),
        on_done=lambda attempt, how: done.append((attempt, how)),
        hooks=hooks,
    )
    settler.start()
    return settler, hooks, done


def test_an_ending_queued_behind_a_write_is_settled_and_the_stop_ends_at_once() -> None:
    store = HeldStore()
    first, second = _claimed(store, 2)
    settler, hooks, done = _started(store, ack_flush=0.05)
    try:
        settler.put(Outcome(first, "completed", result_json="1"))
        assert store.writing.wait(5)
        # While the first ending is being written: a second ending, then the stop. The next
        # batch takes both the ending and the stop's marker off the queue.
        settler.put(Outcome(second, "completed", result_json="2"))
        stopper = threading.Thread(target=settler.stop, kwargs={"timeout": 60}, daemon=True)
        began = time.monotonic()
        stopper.start()
        store.release.set()
        stopper.join(STOP_BOUND_SECONDS)
        took = time.monotonic() - began
        assert not settler.is_alive(), f"the settler still runs {took:.1f} s after its stop"
    finally:
        store.release.set()
        hooks.shutdown(timeout=1)
    assert [attempt.job.id for attempt, _ in done] == [first.job.id, second.job.id]
    assert {store.job_get(job_id=a.job.id).state for a in (first, second)} == {JobState.COMPLETED}


class CountingStore(MemoryDriver):
    """Records the size of each settle write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[int] = []

    def job_settle_many(self, *, items):
        self.writes.append(len(items))
        return super().job_settle_many(items=items)


def test_full_batches_are_written_without_waiting_for_the_flush_window() -> None:
    """The settler sleeps through its flush window instead of waking for each ending; a full
    batch (``ACK_BATCH_MAX`` endings) still ends the window at once, and so does the stop."""
    store = CountingStore()
    attempts = _claimed(store, 2 * ACK_BATCH_MAX + 3)
    settler, hooks, done = _started(store, ack_flush=600.0)
    try:
        for attempt in attempts:
            settler.put(Outcome(attempt, "completed", result_json="1"))
        deadline = time.monotonic() + 60
        while len(done) < 2 * ACK_BATCH_MAX and time.monotonic() < deadline:
            time.sleep(0.01)
        assert store.writes[:2] == [ACK_BATCH_MAX, ACK_BATCH_MAX]
        began = time.monotonic()
        settler.stop(timeout=60)
        assert not settler.is_alive()
        assert time.monotonic() - began < STOP_BOUND_SECONDS
        assert sum(store.writes) == len(attempts) and len(done) == len(attempts)
    finally:
        settler.stop(timeout=1)
        hooks.shutdown(timeout=1)
