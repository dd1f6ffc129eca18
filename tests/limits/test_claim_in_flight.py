"""A flush that would free slots nobody was lent waits for the claim on its way: the runs that
claim brings are lent those slots, and the settle passes the rows to them, instead of deleting
the rows and the worker taking them again with ``lease_acquire_many`` (``handoff.py``). A count
of the runs asked in that statement says which happened."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.limits import jobs
from tests.limits.support import concurrency_rows, finished, intervals, most_at_once
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.base import LeaseGrant, LeaseRun
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.models import Job
from ultimat3_jobs.runtime.worker import handoff
from ultimat3_jobs.types import ClaimedJob


class HeldClaims(PostgresDriver):
    """The PostgreSQL driver, whose claims wait while ``hold`` is set until ``release`` is
    (``entered``: one waits), and which counts the runs asked in ``lease_acquire_many``."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = threading.Event()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.asked = 0

    def job_claim(self, **options: Any) -> list[ClaimedJob]:
        if self.hold.is_set():
            self.entered.set()
            self.release.wait(30)
        return super().job_claim(**options)

    def lease_acquire_many(self, *, runs: list[LeaseRun]) -> list[LeaseGrant]:
        self.asked += len(runs)
        return super().lease_acquire_many(runs=runs)


@pytest.mark.django_db(transaction=True)
def test_a_run_claimed_while_its_keys_slot_idles_is_lent_it_without_a_lease_statement(
    make_worker, monkeypatch
):
    monkeypatch.setattr(handoff, "CLAIM_WAIT_SECONDS", 30.0)  # the held claim below lands first
    driver = HeldClaims()
    running = make_worker(driver=driver, concurrency=4)
    warm = jobs.watcher.enqueue(key="warm").id  # runs wait for a lent slot once bodies ended
    wait_for(lambda: finished([warm]), timeout=30, what="a first body")
    # Its body ends only once the claim held below is on its way (a body that merely slept
    # past the loop's idle wait raced it: a test thread slow to see it running set the hold
    # after the body ended, the flush freed the row with no claim on its way, and the second
    # run asked the store for it).
    jobs.GATE.clear()
    first = jobs.watcher.enqueue(key="w", gated=True).id
    wait_for(lambda: Job.objects.filter(id=first, state="running").exists(), what="first run")
    driver.hold.set()
    assert driver.entered.wait(10), "the worker's next claim did not come"
    asked = driver.asked
    jobs.GATE.set()
    # The first body ended with no run of its key waiting; its flush waits for the claim.
    holdings = running.worker._limits.gate.holdings
    wait_for(lambda: holdings.ending == 1, what="the first body's end")
    second = jobs.watcher.enqueue(key="w").id
    driver.release.set()
    wait_for(lambda: finished([first, second]), timeout=30, what="both runs settled")
    assert driver.asked == asked  # the second run asked the store nothing
    # It ran on the first run's row, passed to it by the first run's settle.
    spans = dict(Job.objects.filter(id__in=[first, second]).values_list("id", "finished_at"))
    assert Job.objects.get(id=second).started_at >= spans[first]
    assert most_at_once(intervals([first, second])) == 1
    assert concurrency_rows() == 0
