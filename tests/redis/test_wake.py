"""The Redis driver's wake: pub/sub on the store's channel, live once its own probe came back;
an enqueue due now wakes its queue, a delayed one does not; closed, it calls nothing more."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import NamedTuple

from tests.drivers.conftest import drop_redis_store
from tests.drivers.support import claim, enqueue, request, wakes_of
from ultimat3_jobs.drivers.base import WakeSubscription
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


@contextlib.contextmanager
def listeners(driver: RedisDriver, *worker_ids: str | None) -> Iterator[list[Listener]]:
    """One live wake subscription per worker id (None: one made for no worker), each recording
    the queues it was woken for; closed after the block."""
    made: list[Listener] = []
    try:
        for worker_id in worker_ids:
            woken: list[str] = []
            subscription = driver.wake_subscribe(on_wake=woken.append, worker_id=worker_id)
            assert subscription is not None
            made.append(Listener(subscription, woken))
            deadline = time.monotonic() + 10
            while not subscription.is_live():
                assert time.monotonic() < deadline, "the wake never went live"
                time.sleep(0.01)
        yield made
    finally:
        for listener in made:
            listener.subscription.close()


class Listener(NamedTuple):
    subscription: WakeSubscription
    woken: list[str]


def woken(*made: Listener) -> tuple[list[str], ...]:
    """What each listener was woken for, once the wakes in flight landed (a broadcast reaches
    every subscriber well within the wait)."""
    time.sleep(0.3)
    return tuple(listener.woken for listener in made)


def test_a_single_enqueue_wakes_one_idle_worker_not_every_one(redis_store: RedisDriver):
    with listeners(redis_store, "worker-a", "worker-b") as (a, b):
        # Both looked and found fewer jobs than they wanted: both are idle on "emails".
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        assert claim(redis_store, ["emails"], worker_id="worker-b") == []
        enqueue(redis_store, queue="emails")
        first, second = woken(a, b)
        assert sorted(first + second) == ["emails"], (first, second)
        # The one woken is no longer idle until it looks again: the next job wakes the other.
        enqueue(redis_store, queue="emails")
        assert woken(a, b) == (["emails"], ["emails"])


def test_a_batch_and_a_queue_with_no_idle_worker_wake_every_subscriber(redis_store: RedisDriver):
    with listeners(redis_store, "worker-a", "worker-b") as (a, b):
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        redis_store.job_enqueue_many(requests=[request(queue="emails")])
        enqueue(redis_store, queue="math")  # nobody idle there: every subscriber hears it
        assert woken(a, b) == (["emails", "math"], ["emails", "math"])


def test_a_worker_that_took_all_it_asked_for_is_not_idle(redis_store: RedisDriver):
    with listeners(redis_store, "worker-a", "worker-b") as (a, b):
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        enqueue(redis_store, queue="emails")
        assert woken(a, b) == (["emails"], [])
        assert len(claim(redis_store, ["emails"], worker_id="worker-a", limit=1)) == 1
        enqueue(redis_store, queue="emails")
        assert woken(a, b) == (["emails", "emails"], ["emails"])


def test_an_idle_worker_gone_from_the_channel_falls_back_to_every_subscriber(
    redis_store: RedisDriver,
):
    with listeners(redis_store, "worker-a", None) as (gone, other):
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        assert claim(redis_store, ["emails"], worker_id="never-subscribed") == []
        gone.subscription.close()  # killed without a goodbye: still listed as idle
        enqueue(redis_store, queue="emails")
        assert woken(gone, other) == ([], ["emails"])
