"""What a hand (a job claimed for this idle worker by the enqueue that woke it) does to the claim
loop: the loop claims next, to take what else is due and to be listed idle again, but only once
the handed body's thread runs. Woken at once, the loop's claim would take the interpreter (the
GIL) from the thread about to start the handed body, on the wake's own path."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tests.drivers.support import state_of
from tests.testapp import jobs
from tests.worker.conftest import RunningWorker, wait_for
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.types import JobState

IDLE = {"use_wake": False, "poll_floor": 60.0, "poll_ceiling": 60.0, "poll_ceiling_wake": 60.0}
"""A worker whose idle loop waits a minute between claims: a claim that follows is woken."""

EARLY = 0.5
"""How long the test waits for a wake of the loop that must not come before the handed body's
thread runs (before, it came with the hand)."""


def test_a_hand_wakes_the_loop_once_its_body_thread_runs(
    make_worker: Callable[..., RunningWorker],
) -> None:
    driver = PostgresDriver()
    running = make_worker(driver=driver, **IDLE)
    worker = running.worker
    assert worker.idle.wait(10)  # its first claim found nothing: it waits a minute now
    claims = worker.claim_count
    gate = threading.Event()
    run_sync = worker._bodies._run_sync

    def gated(attempt: Attempt) -> Any:
        gate.wait(10)  # the body's thread has not picked the attempt up yet
        return run_sync(attempt)

    worker._bodies._run_sync = gated  # type: ignore[method-assign]
    result = jobs.echo.enqueue(n=1)
    (job,) = driver.job_claim(  # as the wake's claim takes it for the idle worker
        queues=["default"], limit=1, worker_id=worker.config.worker_id, lease_seconds=30.0
    )
    assert job.id == result.id
    worker._wake._on_hand(job)  # as the listener's thread hands it
    early = worker._signal.wait(EARLY)
    gate.set()
    wait_for(lambda: state_of(driver, result.id) is JobState.COMPLETED, what="the handed job")
    wait_for(lambda: worker.claim_count > claims, what="the loop's claim after the hand")
    assert not early, "the loop was woken before the handed body's thread ran"
