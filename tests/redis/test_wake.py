"""The Redis driver's wake: pub/sub on the store's channel, live once its own probe came back;
an enqueue due now wakes its queue, a delayed one does not; closed, it calls nothing more."""

from __future__ import annotations

import threading
import time

from tests.drivers.conftest import drop_redis_store
from tests.drivers.support import enqueue, request, wakes_of
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
