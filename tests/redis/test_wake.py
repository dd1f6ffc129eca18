"""The Redis driver's wake: pub/sub on the store's channel, live once its own probe came back;
an enqueue due now wakes its queue, a delayed one does not; closed, it calls nothing more."""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.drivers.conftest import drop_redis_store
from tests.drivers.support import claim, enqueue, request, wakes_of
from ultimat3_jobs.drivers.redis import RedisDriver


def test_a_job_due_now_wakes_its_queue_and_a_delayed_one_does_not(redis_store: RedisDriver):
    with wakes_of(redis_store) as woken:
        enqueue(redis_store, queue="emails")
        enqueue(redis_store, queue="later", delay_seconds=60)
        redis_store.job_enqueue_many(
            requests=[request(queue="math"), request(queue="math"), request(queue="emails")]
        )
    assert woken == ["emails", "math", "emails"]


def test_a_store_wakes_only_its_own_subscribers(redis_store: RedisDriver):
    other = RedisDriver(alias="redis", prefix=redis_store.prefix.replace("}", "-other}"))
    try:
        with wakes_of(redis_store) as woken:
            enqueue(other, queue="elsewhere")
        assert woken == []
    finally:
        other.close()
        drop_redis_store(other)


def test_a_closed_subscription_calls_nothing_more(redis_store: RedisDriver):
    called = threading.Event()
    subscription = redis_store.wake_subscribe(on_wake=lambda queue: called.set())
    assert subscription is not None
    deadline = time.monotonic() + 10
    while not subscription.is_live():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    subscription.close()
    assert not subscription.is_live()
    enqueue(redis_store)
    assert not called.wait(0.5)


def test_close_of_the_driver_closes_its_subscriptions(redis_store: RedisDriver):
    subscription = redis_store.wake_subscribe(on_wake=lambda queue: None)
    assert subscription is not None
    redis_store.close()
    assert not subscription.is_live()


# -- one idle worker woken per job --------------------------------------------------------------


def live(driver: RedisDriver, worker_id: str | None, woken: list[str]) -> Any:
    """A subscription of ``worker_id`` that records its wakes, live when answered."""
    subscription = driver.wake_subscribe(on_wake=woken.append, worker_id=worker_id)
    assert subscription is not None
    deadline = time.monotonic() + 10
    while not subscription.is_live():
        assert time.monotonic() < deadline, "the wake never went live"
        time.sleep(0.01)
    return subscription


def settled() -> None:
    """Let wakes in flight land (a broadcast reaches every subscriber within this)."""
    time.sleep(0.3)


def test_a_single_enqueue_wakes_one_idle_worker_not_every_one(redis_store: RedisDriver):
    a: list[str] = []
    b: list[str] = []
    subscriptions = [live(redis_store, "worker-a", a), live(redis_store, "worker-b", b)]
    try:
        # Both looked and found fewer jobs than they wanted: both are idle on "emails".
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        assert claim(redis_store, ["emails"], worker_id="worker-b") == []
        enqueue(redis_store, queue="emails")
        settled()
        assert sorted([*a, *b]) == ["emails"], (a, b)
        # The one woken is no longer idle until it looks again: the next job wakes the other.
        enqueue(redis_store, queue="emails")
        settled()
        assert (a, b) == (["emails"], ["emails"])
    finally:
        for subscription in subscriptions:
            subscription.close()


def test_a_batch_and_a_queue_with_no_idle_worker_wake_every_subscriber(redis_store: RedisDriver):
    a: list[str] = []
    b: list[str] = []
    subscriptions = [live(redis_store, "worker-a", a), live(redis_store, "worker-b", b)]
    try:
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        redis_store.job_enqueue_many(requests=[request(queue="emails")])
        enqueue(redis_store, queue="math")  # nobody idle there: every subscriber hears it
        settled()
        assert (a, b) == (["emails", "math"], ["emails", "math"])
    finally:
        for subscription in subscriptions:
            subscription.close()


def test_a_worker_that_took_all_it_asked_for_is_not_idle(redis_store: RedisDriver):
    a: list[str] = []
    b: list[str] = []
    subscriptions = [live(redis_store, "worker-a", a), live(redis_store, "worker-b", b)]
    try:
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        enqueue(redis_store, queue="emails")
        settled()
        assert (a, b) == (["emails"], [])
        assert len(claim(redis_store, ["emails"], worker_id="worker-a", limit=1)) == 1
        enqueue(redis_store, queue="emails")
        settled()
        assert (a, b) == (["emails", "emails"], ["emails"])
    finally:
        for subscription in subscriptions:
            subscription.close()


def test_an_idle_worker_gone_from_the_channel_falls_back_to_every_subscriber(
    redis_store: RedisDriver,
):
    a: list[str] = []
    b: list[str] = []
    gone = live(redis_store, "worker-a", a)
    other = live(redis_store, None, b)
    try:
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        assert claim(redis_store, ["emails"], worker_id="never-subscribed") == []
        gone.close()  # killed without a goodbye: still listed as idle
        enqueue(redis_store, queue="emails")
        settled()
        assert (a, b) == ([], ["emails"])
    finally:
        other.close()
