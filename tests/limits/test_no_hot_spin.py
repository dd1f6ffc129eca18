"""No hot spin: a crowd of jobs of one busy key (limit 1) costs two workers no more than twice
the statements per second of the same two workers idle but busy (one long run holding the key,
nothing else due). Statements are counted on every connection the workers' threads open, as
the idle-cost tests count them. The test prints both figures.

The default is scaled down (200 jobs, 3 s windows); ``-m slow`` runs 1,000 jobs for 10 s, and
``ULTIMAT3_HOT_SPIN_JOBS`` / ``ULTIMAT3_HOT_SPIN_SECONDS`` set either size."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db.backends.signals import connection_created

from tests.limits import jobs
from tests.worker.conftest import wait_for
from tests.worker.test_idle_cost import StatementCounter, uninstall
from ultimat3_jobs.models import Job, JobLease

QUEUES = {"queues": ("default",), "concurrency": 4}
WARM_UP_SECONDS = 1.5
"""Long enough for the idle backoff to reach its ceiling and the first claims to settle."""


@pytest.fixture
def counter() -> Iterator[StatementCounter]:
    counting = StatementCounter()
    connection_created.connect(counting.install)
    yield counting
    connection_created.disconnect(counting.install)
    uninstall(counting)


def per_second(counter: StatementCounter, seconds: float) -> float:
    time.sleep(WARM_UP_SECONDS)
    counter.count = 0
    counter.counting = True
    time.sleep(seconds)
    counter.counting = False
    return counter.count / seconds


def holding(make_worker: Callable[..., Any], sleep: float) -> Any:
    """Two workers, one of them running a job of the key for ``sleep`` s."""
    held = jobs.one_at_a_time.enqueue(sleep=sleep)
    for _ in range(2):
        make_worker(**QUEUES)
    wait_for(
        lambda: Job.objects.filter(id=held.id, state="running").exists(), what="the holder runs"
    )
    return held


def stop_all(make_worker: Any) -> None:
    """Stop every worker the fixture started so far (the next phase starts afresh)."""
    for running in make_worker.started:
        running.stop()
    make_worker.started.clear()


def measure(
    make_worker: Any, counter: StatementCounter, *, crowd: int, seconds: float
) -> tuple[float, float]:
    hold_for = WARM_UP_SECONDS + seconds + 2.0
    holding(make_worker, hold_for)
    idle = per_second(counter, seconds)
    stop_all(make_worker)
    Job.objects.all().delete()
    JobLease.objects.all().delete()

    # The same two workers; now the key's crowd waits behind a holder that outlives the window.
    holding(make_worker, hold_for)
    jobs.one_at_a_time.enqueue_many([{"sleep": 0.0}] * (crowd - 1))
    busy = per_second(counter, seconds)
    print(
        f"statements per second, two workers: idle but busy {idle:.1f}; "
        f"{crowd} jobs of one busy key {busy:.1f} ({busy / idle:.2f}x)"
    )
    return idle, busy


@pytest.fixture
def workers(make_worker: Callable[..., Any]) -> Any:
    """``make_worker`` that also lets the test stop what it started (``.started``)."""

    class Starter:
        def __init__(self) -> None:
            self.started: list[Any] = []

        def __call__(self, **options: Any) -> Any:
            running = make_worker(**options)
            self.started.append(running)
            return running

    return Starter()


def test_a_crowd_of_one_busy_key_costs_at_most_twice_an_idle_worker(workers, counter) -> None:
    crowd = int(os.environ.get("ULTIMAT3_HOT_SPIN_JOBS", "200"))
    seconds = float(os.environ.get("ULTIMAT3_HOT_SPIN_SECONDS", "3"))
    idle, busy = measure(workers, counter, crowd=crowd, seconds=seconds)
    assert idle > 0, "the counter saw no statement at all"
    assert busy <= 2 * idle, (idle, busy)


@pytest.mark.slow
def test_a_thousand_jobs_of_one_busy_key_for_ten_seconds(workers, counter) -> None:
    idle, busy = measure(workers, counter, crowd=1000, seconds=10.0)
    assert idle > 0, "the counter saw no statement at all"
    assert busy <= 2 * idle, (idle, busy)
