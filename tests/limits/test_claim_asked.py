"""A flush that would free slots nobody was lent, with no claim on its way while the loop waits
for the settler to claim again (its settle backlog) and the last claim took all it asked,
asks the loop for that claim first and waits for it as for a claim already on its way: the
flush passes the rows to the runs that claim brings instead of deleting them for the worker to
take again with ``lease_acquire_many`` (``handoff.py``). A claim lands for the flush once its runs
were lent what could be lent, before the gate's own lease statement. In three paired runs of
the limits bench's capped drain (20,000 jobs, 2 x 32 slots, a loaded host) the rows
``lease_acquire_many`` inserted fell from a median of 138.5 to 93.6 per 1,000 jobs and the
transactions from 36.1 to 31.2. A loop that looks after the ask and plans no claim (its process
limits, a stop) declines it: the flush goes on at once, and the loop minds its backlog again."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from tests.limits.test_gate import attempt_of, claimed
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.base import LeaseGrant, LeaseRun
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.records import ProcessLimits
from ultimat3_jobs.runtime.common.pool import BodyPool
from ultimat3_jobs.runtime.worker import handoff
from ultimat3_jobs.runtime.worker.ahead import ClaimAhead
from ultimat3_jobs.runtime.worker.handoff import HandOffs, WorkerSide
from ultimat3_jobs.runtime.worker.inflight import ClaimInFlight
from ultimat3_jobs.runtime.worker.limits import LeaseGate

KEY = "job:tests.limits.one_at_a_time"


class Handing(MemoryDriver):
    """The memory driver, as a driver that hands slots on (what the hand-offs check)."""

    hands_off_slots = True


class Loop:
    """The claim loop as the settler sees it: woken, it claims (``begin``, then ``end`` a
    moment later) on a thread of its own; counts its wakes."""

    def __init__(self, ahead: ClaimAhead) -> None:
        self.ahead = ahead
        self.wakes = 0
        self.threads: list[threading.Thread] = []

    def wake(self) -> None:
        self.wakes += 1
        thread = threading.Thread(target=self.claim)
        self.threads.append(thread)
        thread.start()

    def claim(self) -> None:
        assert not self.ahead.behind(10 * self.ahead.settle_backlog)  # asked: past its backlog
        self.ahead.claiming.begin()
        time.sleep(0.05)
        self.ahead.claiming.end(more=True)


class Declining(Loop):
    """The claim loop that, woken, looks and plans no claim (its process limits, say)."""

    def claim(self) -> None:
        self.ahead.claiming.begin(0, self.ahead.claiming.asks)


def handoffs_with(
    gate: LeaseGate, ahead: ClaimAhead, loop: Loop, driver: MemoryDriver | None = None
) -> HandOffs:
    return HandOffs(
        driver=driver or Handing(),
        gate=gate,
        ahead=ahead,
        worker=WorkerSide(
            reserve=lambda n: n,
            start=lambda attempt: None,
            wake=loop.wake,
            find=lambda key: None,
        ),
        lease_seconds=30,
    )


def ended_on_a_slot(gate: LeaseGate) -> Any:
    """A settling run whose body ended on a slot nobody runs on since."""
    run = Run(SimpleNamespace(id=uuid.uuid4(), claim_token=uuid.uuid4()))
    gate.holdings.took(run, KEY)  # the worker's runs are their attempts, hashed by identity
    gate.holdings.ended(run)
    return run


class Run:
    """A run as the holdings key it: one object, hashed by identity (as an ``Attempt``)."""

    def __init__(self, job: Any) -> None:
        self.job = job


@dataclass
class Settling:
    """A worker's hand-offs as a flush sees them, its last claim told ``more``."""

    gate: LeaseGate
    ahead: ClaimAhead
    loop: Loop
    handoffs: HandOffs


@pytest.fixture
def settling() -> Iterator[Any]:
    def build(*, more: bool, loop_class: type[Loop] = Loop) -> Settling:
        gate = LeaseGate(driver=MemoryDriver(), worker_id="w", hooks=hooks)
        ahead = ClaimAhead(4)
        loop = loop_class(ahead)
        ahead.claiming.begin()
        ahead.claiming.end(more=more)
        return Settling(gate, ahead, loop, handoffs_with(gate, ahead, loop))

    hooks = BodyPool(1, name="test-hooks")
    yield build
    hooks.shutdown(timeout=1)


def test_a_flush_freeing_a_slot_with_no_claim_on_its_way_asks_one_and_waits_for_it(
    settling,
) -> None:
    it = settling(more=True)  # the last claim took all it asked
    assert it.ahead.behind(it.ahead.settle_backlog)  # the loop waits for the settler to claim
    assert it.handoffs.await_claim([ended_on_a_slot(it.gate)])
    assert it.loop.wakes == 1
    assert not it.ahead.claiming.flying  # it waited for the claim it asked to land
    for thread in it.loop.threads:
        thread.join(5)


def test_after_a_claim_that_found_less_than_it_asked_a_flush_asks_no_claim(settling) -> None:
    it = settling(more=False)  # the queue ran dry: no claim for a flush's sake
    assert it.ahead.behind(it.ahead.settle_backlog)
    assert not it.handoffs.await_claim([ended_on_a_slot(it.gate)])
    assert it.loop.wakes == 0


def test_a_flush_asks_no_claim_while_the_loop_does_not_wait_for_the_settler(settling) -> None:
    it = settling(more=True)
    assert not it.ahead.behind(0)  # the loop claims when it wants: the flush does not wait
    assert not it.handoffs.await_claim([ended_on_a_slot(it.gate)])
    assert it.loop.wakes == 0


def test_a_flush_goes_on_once_the_loop_declines_its_ask(settling, monkeypatch) -> None:
    monkeypatch.setattr(handoff, "CLAIM_WAIT_SECONDS", 60.0)  # only the decline ends it soon
    it = settling(more=True, loop_class=Declining)
    assert it.ahead.behind(it.ahead.settle_backlog)
    ending = ended_on_a_slot(it.gate)
    flush = threading.Thread(target=it.handoffs.await_claim, args=([ending],), daemon=True)
    flush.start()
    flush.join(10)
    assert not flush.is_alive()  # answered by the decline, not by the wait's end
    assert it.loop.wakes == 1
    assert not it.ahead.claiming.asked
    assert it.ahead.behind(it.ahead.settle_backlog)  # the loop minds its backlog again
    for thread in it.loop.threads:
        thread.join(5)


def test_an_ask_made_after_the_loop_looked_outlives_its_decline() -> None:
    claiming = ClaimInFlight()
    looked = claiming.asks
    claiming.ask()  # after the loop read the asks: its plan did not see this one
    assert claiming.begin(0, looked) is None
    assert claiming.asked  # the ask's wake brings the loop round again, to see it


def test_a_worker_that_plans_no_claim_declines_an_ask_and_a_stopped_one_takes_none(
    make_worker,
) -> None:
    running = make_worker(queues=("default",), concurrency=2, limits=ProcessLimits(in_flight=0))
    claiming = running.worker._ahead.claiming
    claiming.ask()
    running.worker._signal.set()  # as the settler wakes the loop
    wait_for(lambda: not claiming.asked, timeout=10, what="the ask declined")
    assert running.worker.claim_count == 0
    running.stop()
    claiming.ask()
    assert not claiming.asked  # a stopped loop claims nothing: a flush never waits for it


class Watching(Handing):
    """Notes whether the claim was still marked on its way when the gate asked for leases."""

    def __init__(self, ahead: ClaimAhead) -> None:
        super().__init__()
        self.ahead = ahead
        self.flying_at_statement: list[bool] = []

    def lease_acquire_many(self, *, runs: list[LeaseRun]) -> list[LeaseGrant]:
        self.flying_at_statement.append(self.ahead.claiming.flying)
        return super().lease_acquire_many(runs=runs)


def test_a_claim_lands_for_the_flush_before_the_gates_lease_statement() -> None:
    ahead = ClaimAhead(4)
    driver = Watching(ahead)
    hooks = BodyPool(1, name="test-hooks")
    gate = LeaseGate(driver=driver, worker_id="w", hooks=hooks)
    handoffs_with(gate, ahead, Loop(ahead), driver)
    ahead.claiming.begin()
    (job,) = claimed(driver)
    assert gate.start([attempt_of(job)]) == ["run"]
    assert driver.flying_at_statement == [False]
    driver.close()
    hooks.shutdown(timeout=1)
