"""What follows a whole flush runs once per flush, not once per ending.

The settler writes a flush's endings in one statement and reports each to the worker
(``on_done``); the worker's claim loop is nudged once the flush is done (``on_flushed``). A
nudge per ending (it reads the free slots and the claim-ahead target, under two locks) cost
more of a short job's worker CPU than the rest of what the worker does with a settled attempt.
"""

from __future__ import annotations

import threading

from tests.testapp import jobs
from tests.worker.conftest import wait_for
from tests.worker.test_settle_refused import _claimed
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.runtime.common.pool import BodyPool
from ultimat3_jobs.runtime.worker import WorkerConfig
from ultimat3_jobs.runtime.worker.attempt import Outcome
from ultimat3_jobs.runtime.worker.settle import Settler
from ultimat3_jobs.types import JobState

ENDINGS = 40


def test_a_flush_reports_every_ending_then_calls_on_flushed_once() -> None:
    store = MemoryDriver()
    attempts = _claimed(store, ENDINGS)
    events: list[str] = []
    flushed = threading.Event()

    def on_flushed() -> None:
        events.append("flushed")
        flushed.set()

    hooks = BodyPool(1, name="test-hooks")
    settler = Settler(
        driver=store,
        # A window long enough that every ending below joins the one flush.
        config=WorkerConfig(queues=("default",), concurrency=2, ack_flush=0.5),
        on_done=lambda attempt, how: events.append(how),
        hooks=hooks,
        on_flushed=on_flushed,
    )
    settler.start()
    try:
        for attempt in attempts:
            settler.put(Outcome(attempt, "completed", result_json="null"))
        assert flushed.wait(10)
    finally:
        settler.stop(timeout=10)
        hooks.shutdown(timeout=1)
    assert events == ["completed"] * ENDINGS + ["flushed"]
    states = {store.job_get(job_id=a.job.id).state for a in attempts}
    assert states == {JobState.COMPLETED}


def test_a_worker_nudges_its_claim_loop_about_once_per_job_not_twice(make_worker) -> None:
    """Each ending nudges the loop once as its body ends (its slot is free); its settle adds
    one nudge per flush, not one per ending."""
    count = 200
    ids = {r.id for r in jobs.noop.enqueue_many([{} for _ in range(count)])}
    running = make_worker(concurrency=8, start=False, ack_flush=0.05)
    worker = running.worker
    nudges = 0
    lock = threading.Lock()
    nudge = worker._nudge

    def counted() -> None:
        nonlocal nudges
        with lock:
            nudges += 1
        nudge()

    worker._nudge = counted  # type: ignore[method-assign]
    worker._settler._on_flushed = counted
    running.start()
    wait_for(lambda: worker.settled_count >= count, what=f"{count} jobs settled")
    running.stop()
    assert len(ids) == count
    assert nudges < 1.5 * count, f"{nudges} nudges for {count} jobs"
