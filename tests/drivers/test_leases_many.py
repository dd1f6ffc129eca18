"""``lease_acquire_many`` (``drivers/leases_seam.py``): each run's ``lease_acquire``, in the order
given, as one call, on every driver (PostgreSQL takes runs of one concurrency slot each in one
statement): the earlier runs of a key take its free slots, the rest are answered busy, a run not
running under its claim token is fenced out, a run takes over its own leftover slot, and runs
with other requests are answered as ``lease_acquire`` answers them."""

from __future__ import annotations

import uuid

import pytest

from tests.drivers.leases_support import expire_key
from tests.drivers.support import LEASE, claim_one, enqueue, get
from ultimat3_jobs.drivers.base import LeaseGrant, LeaseRequest, LeaseRun
from ultimat3_jobs.drivers.job_driver import JobDriver

KEY = "job:tests.echo"
OTHER = "job:tests.other"


def running(driver: JobDriver):
    enqueue(driver)
    return claim_one(driver)


def run_of(job, *requests: LeaseRequest, token: uuid.UUID | None = None) -> LeaseRun:
    return LeaseRun(job_id=job.id, claim_token=token or job.claim_token, requests=requests)


def cap(limit: int, key: str = KEY) -> LeaseRequest:
    return LeaseRequest(key=key, limit=limit)


@pytest.fixture(autouse=True)
def _lease_store(driver: JobDriver) -> None:
    assert driver.has_lease_store, f"the {driver.name} driver keeps a lease store"


def test_the_earlier_runs_of_a_key_take_its_free_slots_the_rest_are_busy(driver):
    jobs = [running(driver) for _ in range(4)]
    before = [get(driver, job.id).started_at for job in jobs]
    answers = driver.lease_acquire_many(runs=[run_of(job, cap(2)) for job in jobs])
    assert [a.granted for a in answers] == [True, True, False, False]
    assert {a.busy_key for a in answers[2:]} == {KEY}
    assert all(LEASE - 5 <= a.retry_after <= LEASE + 1 for a in answers[2:])
    holders = driver.lease_holders(key=KEY)
    assert [(h.slot, h.job_id, h.claim_token) for h in holders] == [
        (0, jobs[0].id, jobs[0].claim_token),
        (1, jobs[1].id, jobs[1].claim_token),
    ]
    after = [get(driver, job.id).started_at for job in jobs]
    assert after[0] >= before[0] and after[1] >= before[1]  # granted: stamped at the grant
    assert after[2:] == before[2:]  # busy: untouched
    assert holders[0].expires_at == get(driver, jobs[0].id).lease_expires_at


def test_free_slots_between_held_ones_are_taken_lowest_first_per_key(driver):
    held, a, b, c = (running(driver) for _ in range(4))
    assert driver.lease_acquire(job_id=held.id, claim_token=held.claim_token, requests=[cap(3)])
    answers = driver.lease_acquire_many(
        runs=[run_of(a, cap(3)), run_of(b, cap(1, OTHER)), run_of(c, cap(3))]
    )
    assert [x.granted for x in answers] == [True, True, True]
    assert [(h.slot, h.job_id) for h in driver.lease_holders(key=KEY)] == [
        (0, held.id),
        (1, a.id),
        (2, c.id),
    ]
    assert [h.job_id for h in driver.lease_holders(key=OTHER)] == [b.id]


def test_a_fenced_run_takes_nothing_and_the_others_go_on(driver):
    fenced, other = running(driver), running(driver)
    answers = driver.lease_acquire_many(
        runs=[run_of(fenced, cap(1), token=uuid.uuid4()), run_of(other, cap(1))]
    )
    assert answers == [LeaseGrant(granted=False, busy_key=None), LeaseGrant(granted=True)]
    assert [h.job_id for h in driver.lease_holders(key=KEY)] == [other.id]


def test_a_run_takes_over_its_own_leftover_and_an_expired_slot_is_free(driver):
    own, old, new = running(driver), running(driver), running(driver)
    assert driver.lease_acquire(job_id=own.id, claim_token=own.claim_token, requests=[cap(2)])
    assert driver.lease_acquire(job_id=old.id, claim_token=old.claim_token, requests=[cap(2)])
    expire_key(driver, KEY)
    assert driver.lease_acquire(job_id=own.id, claim_token=own.claim_token, requests=[cap(2)])
    answers = driver.lease_acquire_many(runs=[run_of(own, cap(2)), run_of(new, cap(2))])
    assert [a.granted for a in answers] == [True, True]
    assert sorted(h.job_id for h in driver.lease_holders(key=KEY)) == sorted([own.id, new.id])
    assert len(driver.lease_holders(key=KEY)) == 2


def test_runs_with_a_rate_are_answered_as_lease_acquire_answers_them(driver):
    first, second = running(driver), running(driver)
    rate = LeaseRequest(key="rate:tests.echo", limit=1, kind="rate", ttl_seconds=60.0)
    answers = driver.lease_acquire_many(
        runs=[run_of(first, cap(2), rate), run_of(second, cap(2), rate)]
    )
    assert answers[0] == LeaseGrant(granted=True)
    assert (answers[1].granted, answers[1].busy_key) == (False, "rate:tests.echo")
    assert [h.job_id for h in driver.lease_holders(key=KEY)] == [first.id]  # all or nothing


def test_no_runs_answer_nothing(driver):
    assert driver.lease_acquire_many(runs=[]) == []
