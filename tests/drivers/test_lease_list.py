"""The operator's read of the lease store (``lease_list``): every live row by key then slot,
with the worker whose claim holds its job; expired rows left out; bounded; a driver without a
lease store refuses with ``X_DRIVER_CAPABILITY_MISSING``."""

from __future__ import annotations

import pytest

from tests.drivers.leases_support import expire_key
from tests.drivers.support import WORKER, ack, claim_one, enqueue
from ultimat3_jobs.drivers.base import LEASE_LIST_MAX, LeaseRequest
from ultimat3_jobs.drivers.job_driver import JobDriver
from ultimat3_jobs.errors import DriverCapabilityMissing, StoreRefused


def running(driver: JobDriver, worker_id: str = WORKER):
    enqueue(driver)
    return claim_one(driver, worker_id=worker_id)


def take(driver: JobDriver, job, *requests: LeaseRequest) -> None:
    grant = driver.lease_acquire(job_id=job.id, claim_token=job.claim_token, requests=requests)
    assert grant.granted


def test_lease_list_answers_every_live_row_by_key_then_slot(driver):
    if not driver.has_lease_store:
        with pytest.raises(DriverCapabilityMissing):
            driver.lease_list()
        return
    a, b, c = running(driver, "w-a"), running(driver, "w-b"), running(driver, "w-c")
    take(driver, a, LeaseRequest(key="job:z", limit=2))
    take(driver, b, LeaseRequest(key="job:z", limit=2))
    take(driver, c, LeaseRequest(key="job-key:a:k", limit=1))
    take(driver, c, LeaseRequest(key="rate:a", limit=5, kind="rate", ttl_seconds=60))
    rows = driver.lease_list()
    assert [(h.key, h.slot, h.kind, h.job_id, h.worker_id) for h in rows] == [
        ("job-key:a:k", 0, "concurrency", c.id, "w-c"),
        ("job:z", 0, "concurrency", a.id, "w-a"),
        ("job:z", 1, "concurrency", b.id, "w-b"),
        ("rate:a", 0, "rate", c.id, "w-c"),
    ]
    assert rows[1].claim_token == a.claim_token
    assert rows[1].acquired_at <= rows[1].expires_at
    assert [h.key for h in driver.lease_list(kind="concurrency")] == [
        "job-key:a:k",
        "job:z",
        "job:z",
    ]
    assert [h.key for h in driver.lease_list(kind="rate")] == ["rate:a"]
    assert len(driver.lease_list(limit=2)) == 2


def test_lease_list_leaves_out_expired_rows_and_the_worker_of_a_settled_job(driver):
    if not driver.has_lease_store:
        pytest.skip(f"the {driver.name} driver keeps no lease store yet")
    a, b = running(driver), running(driver)
    take(driver, a, LeaseRequest(key="job:x", limit=1))
    take(driver, b, LeaseRequest(key="rate:x", limit=1, kind="rate", ttl_seconds=60))
    expire_key(driver, "job:x")
    assert ack(driver, b.id, b.claim_token)
    (stamp,) = driver.lease_list()
    assert (stamp.key, stamp.job_id, stamp.worker_id) == ("rate:x", b.id, None)


@pytest.mark.parametrize(
    "arguments", [{"limit": 0}, {"limit": LEASE_LIST_MAX + 1}, {"limit": True}, {"kind": "x"}]
)
def test_lease_list_refuses_a_bad_kind_or_limit(driver, arguments):
    if not driver.has_lease_store:
        pytest.skip(f"the {driver.name} driver keeps no lease store yet")
    with pytest.raises(StoreRefused):
        driver.lease_list(**arguments)
