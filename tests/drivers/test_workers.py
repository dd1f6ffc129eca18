"""worker_heartbeat, worker_list and worker_remove: the registry of live worker processes, its
expiry and purge, and the demand each heartbeat records."""

from __future__ import annotations

import sys

import pytest

from tests.drivers.support import HOUR, claim_ids, enqueue, seconds_between, utcnow

TTL = 30.0


def beat(driver, worker_id="w-1", **overrides):
    fields = {
        "worker_id": worker_id,
        "host": "host-a",
        "pid": 4321,
        "queues": ["default"],
        "slots": 8,
        "ttl_seconds": TTL,
    }
    fields.update(overrides)
    driver.worker_heartbeat(**fields)


def listed(driver, worker_id):
    found = [worker for worker in driver.worker_list() if worker.id == worker_id]
    assert len(found) == 1, driver.worker_list()
    return found[0]


def ids(driver):
    return [worker.id for worker in driver.worker_list()]


def test_heartbeat_inserts_a_row(driver):
    assert driver.worker_list() == []
    beat(driver, queues=["default", "beta", "default"], slots=4)
    worker = listed(driver, "w-1")
    assert (worker.host, worker.pid, worker.slots) == ("host-a", 4321, 4)
    assert worker.queues == ["default", "beta"]
    assert worker.demand == {"default": 0, "beta": 0}
    for moment in (worker.started_at, worker.heartbeat_at, worker.expires_at):
        assert moment.utcoffset() is not None
    assert worker.started_at == worker.heartbeat_at
    assert abs(seconds_between(worker.heartbeat_at, utcnow())) < 60
    assert seconds_between(worker.expires_at, worker.heartbeat_at) == pytest.approx(TTL)


def test_heartbeat_renews_keeping_started_at(driver, store):
    beat(driver)
    first = listed(driver, "w-1")
    store.backdate_worker("w-1")
    beat(driver, host="host-b", pid=99, queues=["beta"], slots=2, ttl_seconds=90)
    renewed = listed(driver, "w-1")
    assert renewed.started_at == first.started_at - HOUR
    assert seconds_between(renewed.heartbeat_at, first.heartbeat_at - HOUR) == pytest.approx(
        3600, abs=60
    )
    assert seconds_between(renewed.expires_at, renewed.heartbeat_at) == pytest.approx(90)
    assert (renewed.host, renewed.pid, renewed.queues, renewed.slots) == ("host-b", 99, ["beta"], 2)
    assert ids(driver) == ["w-1"]


def test_list_shows_only_unexpired_rows_by_id(driver, store):
    for worker_id in ("w-b", "w-c", "w-a", "W-z"):
        beat(driver, worker_id)
    store.expire_worker("w-c")
    # Code point order, whatever the database's collation: upper case first.
    assert ids(driver) == ["W-z", "w-a", "w-b"]


def test_an_expired_row_stays_until_a_heartbeat_purges_it(driver, store):
    beat(driver, "w-1")
    beat(driver, "w-2")
    store.expire_worker("w-1")
    assert ids(driver) == ["w-2"]
    assert driver.worker_remove(worker_id="w-1") is True

    beat(driver, "w-1")
    store.expire_worker("w-1")
    beat(driver, "w-2")
    assert driver.worker_remove(worker_id="w-1") is False
    assert ids(driver) == ["w-2"]


def test_an_expired_worker_renews_its_own_row(driver, store):
    beat(driver, "w-1")
    started_at = listed(driver, "w-1").started_at
    store.expire_worker("w-1")
    assert ids(driver) == []
    beat(driver, "w-1")
    assert listed(driver, "w-1").started_at == started_at


def test_demand_counts_due_jobs_per_queue(driver):
    enqueue(driver)
    enqueue(driver)
    enqueue(driver, delay_seconds=3600)
    enqueue(driver, queue="beta")
    running = enqueue(driver, queue="gamma")
    assert claim_ids(driver, ["gamma"]) == [running]
    queues = ["default", "beta", "gamma", "empty"]
    beat(driver, queues=queues)
    expected = {"default": 2, "beta": 1, "gamma": 0, "empty": 0}
    assert listed(driver, "w-1").demand == expected
    assert driver.queue_demand(queues=queues) == expected


def test_demand_moves_with_each_heartbeat(driver):
    beat(driver)
    assert listed(driver, "w-1").demand == {"default": 0}
    enqueue(driver)
    beat(driver)
    assert listed(driver, "w-1").demand == {"default": 1}
    assert len(claim_ids(driver)) == 1
    beat(driver)
    assert listed(driver, "w-1").demand == {"default": 0}


def test_demand_is_zero_for_a_paused_queue(driver):
    enqueue(driver)
    enqueue(driver, queue="beta")
    driver.queue_pause(queue="default")
    beat(driver, queues=["default", "beta"])
    assert listed(driver, "w-1").demand == {"default": 0, "beta": 1}
    driver.queue_resume(queue="default")
    beat(driver, queues=["default", "beta"])
    assert listed(driver, "w-1").demand == {"default": 1, "beta": 1}


def test_demand_is_all_zeros_while_draining(driver):
    enqueue(driver)
    enqueue(driver, queue="beta")
    beat(driver, queues=["default", "beta"], draining=True)
    assert listed(driver, "w-1").demand == {"default": 0, "beta": 0}
    beat(driver, queues=["default", "beta"])
    assert listed(driver, "w-1").demand == {"default": 1, "beta": 1}


def test_demand_is_bounded_like_queue_demand(driver, monkeypatch):
    # The bound, wherever the driver's package reads it (each driver is split into modules).
    package = type(driver).__module__.rsplit(".", 1)[0] + "."
    readers = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith(package) and hasattr(module, "QUEUE_DEMAND_ROWS")
    ]
    assert readers
    for module in readers:
        monkeypatch.setattr(module, "QUEUE_DEMAND_ROWS", 3)
    for _ in range(5):
        enqueue(driver)
    beat(driver)
    assert listed(driver, "w-1").demand == {"default": 3}
    assert driver.queue_demand(queues=["default"]) == {"default": 3}


def test_remove_answers_true_then_false(driver):
    beat(driver, "w-1")
    beat(driver, "w-2")
    assert driver.worker_remove(worker_id="w-1") is True
    assert driver.worker_remove(worker_id="w-1") is False
    assert driver.worker_remove(worker_id="never") is False
    assert ids(driver) == ["w-2"]


def test_heartbeat_refuses_one_string_as_queues(driver):
    with pytest.raises(TypeError):
        beat(driver, queues="default")
    assert driver.worker_list() == []


def test_the_heartbeat_keeps_the_workers_sheds_and_refusals(driver):
    beat(driver)
    assert listed(driver, "w-1").limits == {}
    counts = {"shed": {"a.job": 3, "b.job": 1}, "refused": {"a.job": 2}}
    beat(driver, limits=counts)
    kept = listed(driver, "w-1").limits
    # A driver without a lease store sheds nothing and keeps none.
    assert kept == (counts if driver.has_lease_store else {})
    beat(driver, limits={"shed": {"a.job": 4}})
    assert listed(driver, "w-1").limits == (
        {"shed": {"a.job": 4}} if driver.has_lease_store else {}
    )
