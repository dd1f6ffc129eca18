"""The lease store (``drivers/leases_seam.py``): one row per held slot, fenced by the claim token,
all or nothing, renewed by the heartbeat, freed by the settle and the rescue; rate stamps spent
for their period whatever the run does."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from tests.drivers.leases_support import expire_key, lease_rows
from tests.drivers.support import (
    LEASE,
    ack,
    claim_one,
    enqueue,
    get,
    heartbeat,
    nack,
    rescue,
    utcnow,
)
from ultimat3_jobs.drivers.base import LeaseGrant, LeaseRequest
from ultimat3_jobs.drivers.job_driver import JobDriver
from ultimat3_jobs.types import SettleItem

KEY = "job:tests.echo"


def running(driver: JobDriver, **overrides):
    enqueue(driver, **overrides)
    return claim_one(driver)


def take(driver: JobDriver, job, *requests: LeaseRequest) -> LeaseGrant:
    return driver.lease_acquire(job_id=job.id, claim_token=job.claim_token, requests=requests)


def cap(limit: int, key: str = KEY) -> LeaseRequest:
    return LeaseRequest(key=key, limit=limit)


def rate(limit: int, key: str = "rate:tests.echo", seconds: float = 60.0) -> LeaseRequest:
    return LeaseRequest(key=key, limit=limit, kind="rate", ttl_seconds=seconds)


@pytest.fixture(autouse=True)
def _lease_store(driver: JobDriver) -> None:
    assert driver.has_lease_store, f"the {driver.name} driver keeps a lease store"


def test_lease_acquire_takes_the_lowest_free_slot_up_to_the_limit(driver):
    first, second, third = (running(driver) for _ in range(3))
    assert take(driver, first, cap(2)) == LeaseGrant(granted=True)
    assert take(driver, second, cap(2)).granted
    busy = take(driver, third, cap(2))
    assert not busy.granted and busy.busy_key == KEY
    assert LEASE - 5 <= busy.retry_after <= LEASE + 1  # the first holder's lease
    holders = driver.lease_holders(key=KEY)
    assert [(h.slot, h.kind, h.job_id, h.claim_token) for h in holders] == [
        (0, "concurrency", first.id, first.claim_token),
        (1, "concurrency", second.id, second.claim_token),
    ]
    assert lease_rows(driver) == [(KEY, 0, "concurrency"), (KEY, 1, "concurrency")]


def test_a_slot_expires_with_its_attempts_lease(driver):
    job = running(driver)
    take(driver, job, cap(1))
    (holder,) = driver.lease_holders(key=KEY)
    assert holder.expires_at == get(driver, job.id).lease_expires_at


def test_lease_acquire_is_fenced_by_the_claim_token(driver):

    job = running(driver)
    grant = driver.lease_acquire(job_id=job.id, claim_token=uuid.uuid4(), requests=[cap(1)])
    assert grant == LeaseGrant(granted=False, busy_key=None)
    assert lease_rows(driver) == []
    assert ack(driver, job.id, job.claim_token)
    assert take(driver, job, cap(1)) == LeaseGrant(granted=False)  # settled: not running


def test_a_grant_stamps_started_at(driver):
    job = running(driver)
    claimed_at = get(driver, job.id).started_at
    take(driver, job, cap(1))
    started = get(driver, job.id).started_at
    assert claimed_at is not None and started is not None and started >= claimed_at


def test_a_run_takes_over_its_own_leftover_slot(driver):
    job = running(driver)
    assert take(driver, job, cap(2)).granted
    assert take(driver, job, cap(2)).granted
    assert [h.slot for h in driver.lease_holders(key=KEY)] == [0]


def test_an_expired_slot_is_free(driver):
    old, new = running(driver), running(driver)
    take(driver, old, cap(1))
    assert not take(driver, new, cap(1)).granted
    expire_key(driver, KEY)
    assert driver.lease_holders(key=KEY) == []
    assert take(driver, new, cap(1)).granted
    assert [h.job_id for h in driver.lease_holders(key=KEY)] == [new.id]


def test_keys_are_independent(driver):
    a, b = running(driver), running(driver)
    assert take(driver, a, cap(1, "job-key:tests.echo:a")).granted
    assert take(driver, b, cap(1, "job-key:tests.echo:b")).granted


def test_lease_acquire_is_all_or_nothing(driver):
    first, second = running(driver), running(driver)
    assert take(driver, first, cap(1, "job:x"), rate(1)).granted
    grant = take(driver, second, cap(1, "job:y"), rate(1))
    assert not grant.granted and grant.busy_key == "rate:tests.echo"
    assert 55 <= grant.retry_after <= 61
    assert driver.lease_holders(key="job:y") == []  # given back


def settle_many(action: str, *, counts: bool = True) -> Any:
    def write(driver: JobDriver, job_id: Any, token: Any) -> bool:
        item = SettleItem(job_id=job_id, claim_token=token, action=action, counts_as_attempt=counts)
        return job_id in driver.job_settle_many(items=[item])

    return write


@pytest.mark.parametrize(
    "settle",
    [
        pytest.param(ack, id="ack"),
        pytest.param(settle_many("complete"), id="settle_many_complete"),
        pytest.param(settle_many("retry", counts=False), id="settle_many_release"),
        pytest.param(settle_many("fail", counts=False), id="settle_many_refuse"),
        pytest.param(settle_many("drop"), id="settle_many_drop"),
        pytest.param(nack("retry"), id="nack_retry"),
        pytest.param(nack("retry", counts=False), id="nack_release"),
        pytest.param(nack("fail"), id="nack_fail"),
        pytest.param(nack("fail", counts=False), id="nack_refuse"),
        pytest.param(nack("drop"), id="nack_drop"),
    ],
)
def test_the_settle_frees_the_runs_slots_and_keeps_its_rate_stamp(driver, settle):
    job = running(driver)
    assert take(driver, job, cap(1), rate(5)).granted
    assert settle(driver, job.id, job.claim_token)
    assert lease_rows(driver) == [("rate:tests.echo", 0, "rate")]


def test_the_cancel_frees_a_running_jobs_slots(driver):
    job = running(driver)
    take(driver, job, cap(1))
    assert driver.job_cancel(job_id=job.id)
    assert lease_rows(driver) == []


def test_the_rescue_frees_the_slots_of_an_expired_attempt(driver, store):
    job = running(driver)
    take(driver, job, cap(1))
    store.expire_lease(job.id)
    assert [r.id for r in rescue(driver)] == [job.id]
    assert lease_rows(driver) == []


def test_the_heartbeat_renews_the_runs_slots(driver):
    job = running(driver)
    take(driver, job, cap(1), rate(1, seconds=30))
    expire_key(driver, KEY, by=-timedelta(seconds=5))
    assert heartbeat(driver, job.id, job.claim_token)
    lease = get(driver, job.id).lease_expires_at
    (holder,) = driver.lease_holders(key=KEY)
    assert holder.expires_at == lease
    (stamp,) = driver.lease_holders(key="rate:tests.echo")
    assert stamp.expires_at <= utcnow() + timedelta(seconds=31)


def test_lease_abandon_frees_concurrency_slots_and_keeps_rate_stamps(driver):
    job, other = running(driver), running(driver)
    take(driver, job, cap(1), rate(1))
    assert driver.lease_abandon(job_id=other.id, claim_token=other.claim_token) == 0
    assert driver.lease_abandon(job_id=job.id, claim_token=job.claim_token) == 1
    assert lease_rows(driver) == [("rate:tests.echo", 0, "rate")]
    assert take(driver, other, cap(1)).granted
    assert not take(driver, other, rate(1)).granted  # the stamp stays spent


def test_lease_release_frees_every_slot_of_a_key(driver):
    a, b, c = running(driver), running(driver), running(driver)
    take(driver, a, cap(2))
    take(driver, b, cap(2))
    take(driver, c, cap(1, "job:other"))
    assert driver.lease_release(key=KEY) == 2
    assert lease_rows(driver) == [("job:other", 0, "concurrency")]
    assert driver.lease_release(key="rate:tests.echo") == 0


def test_a_rate_stamp_is_free_again_after_its_period(driver):
    a, b = running(driver), running(driver)
    assert take(driver, a, rate(1)).granted
    ack(driver, a.id, a.claim_token)
    assert not take(driver, b, rate(1)).granted
    expire_key(driver, "rate:tests.echo")
    assert take(driver, b, rate(1)).granted


def test_the_suspend_frees_the_runs_slots_and_keeps_its_rate_stamp(driver):
    job = running(driver)
    assert take(driver, job, cap(1), rate(5)).granted
    assert driver.step_wait(
        job_id=job.id,
        claim_token=job.claim_token,
        name="w",
        seq=1,
        kind="sleep",
        seconds=3600.0,
    )
    assert driver.job_suspend(job_id=job.id, claim_token=job.claim_token, step="w")
    assert lease_rows(driver) == [("rate:tests.echo", 0, "rate")]


def test_a_slot_taken_over_from_an_expired_holder_stays_with_its_new_holder(driver, store):
    old, new = running(driver), running(driver)
    take(driver, old, cap(1))
    expire_key(driver, KEY)
    assert take(driver, new, cap(1)).granted
    # The old attempt's settle and abandon touch only its own rows, never the slot's new holder.
    assert driver.lease_abandon(job_id=old.id, claim_token=old.claim_token) == 0
    assert ack(driver, old.id, old.claim_token)
    assert heartbeat(driver, new.id, new.claim_token)
    (holder,) = driver.lease_holders(key=KEY)
    assert (holder.job_id, holder.expires_at) == (new.id, get(driver, new.id).lease_expires_at)
