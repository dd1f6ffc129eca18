"""What a no-op job costs the worker, counted rather than timed (the host is shared and noisy).

A job's path through the worker (claim, start, body, ending, settle) runs once per job on every
drain. Two costs were found there and removed: the job's ids, ``uuid.UUID`` objects whose hash
is a Python call, were hashed about 20 times per job (pairs of two looked up in the lease slot
maps even when no run holds a slot, sets of ids built and searched per flush); and every
attempt's ``ctx.cancelled`` built a lock and a condition that most bodies never wait on.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter

import pytest

from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.model.context import CancelEvent, JobContext
from ultimat3_jobs.runtime.worker.holdings import Holdings

JOBS = 300


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts ``uuid.UUID.__hash__`` and ``threading.Condition`` constructions, any thread."""
    counts: Counter[str] = Counter()
    uuid_hash = uuid.UUID.__hash__
    condition_init = threading.Condition.__init__

    def hashed(self: uuid.UUID) -> int:
        counts["uuid hash"] += 1
        return uuid_hash(self)

    def condition(self: threading.Condition, *args: object, **kwargs: object) -> None:
        counts["condition"] += 1
        condition_init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(uuid.UUID, "__hash__", hashed)
    monkeypatch.setattr(threading.Condition, "__init__", condition)
    return counts


def test_a_no_op_job_hashes_its_ids_a_few_times_and_builds_no_condition(
    make_worker, counted: Counter[str]
) -> None:
    """Before: about 20 id hashes and one condition per job; now the id is hashed where the
    worker keeps the attempt (put and popped), and where the settle answers it."""
    jobs.noop.enqueue_many([{} for _ in range(JOBS)])
    running = make_worker(concurrency=8, start=False, ack_flush=0.02)
    worker = running.worker
    before = Counter(counted)  # the enqueue's own
    running.start()
    wait_for(lambda: worker.settled_count >= JOBS, what=f"{JOBS} jobs settled")
    per_job = {what: n / JOBS for what, n in (counted - before).items()}
    running.stop()
    assert per_job.get("uuid hash", 0) <= 8, per_job
    assert per_job.get("condition", 0) < 0.2, per_job


def test_holdings_hash_no_pair_while_no_run_holds_a_slot(counted: Counter[str]) -> None:
    holdings = Holdings()
    pair = (uuid.uuid4(), uuid.uuid4())
    holdings.ended(pair)
    assert holdings.lendable(pair) is None
    assert not holdings.owns(pair)
    assert not holdings.ended_on(pair)
    assert holdings.gone(pair) is None
    assert holdings.none_held()
    assert counted["uuid hash"] == 0
    holdings.took(pair, "k")  # one held: the lookups look again
    assert not holdings.none_held()
    holdings.ended(pair)
    assert holdings.ended_on(pair)
    assert holdings.gone(pair) == "k"
    assert holdings.none_held()


def test_cancelled_is_an_event_whose_condition_comes_when_first_needed() -> None:
    ctx = JobContext(job_id=uuid.uuid4(), name="tests.noop")
    cancelled = ctx.cancelled
    assert isinstance(cancelled, threading.Event)
    assert isinstance(cancelled, CancelEvent)
    assert not cancelled.is_set()
    assert "_cond" not in vars(cancelled)  # nothing waited or set: no lock, no condition
    waited: list[bool] = []
    waiter = threading.Thread(target=lambda: waited.append(cancelled.wait(10)))
    waiter.start()
    time.sleep(0.05)
    cancelled.set()
    waiter.join(10)
    assert waited == [True]
    assert cancelled.is_set() and cancelled.wait(0)
    cancelled.clear()
    assert not cancelled.is_set() and not cancelled.wait(0.01)


def test_two_threads_first_asking_share_one_condition() -> None:
    for _ in range(200):
        event = CancelEvent()
        seen: list[threading.Condition] = []
        start = threading.Barrier(2)

        def ask(
            event: CancelEvent = event,
            seen: list[threading.Condition] = seen,
            start: threading.Barrier = start,
        ) -> None:
            start.wait()
            seen.append(event._cond)

        threads = [threading.Thread(target=ask) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert seen[0] is seen[1]
