"""The memory driver's wake: called from the enqueuing thread, after the write and outside the
driver's lock, for created jobs due now; one call per queue per write."""

from __future__ import annotations

from datetime import timedelta

from tests.drivers.support import enqueue, request, utcnow
from ultimat3_jobs.drivers.memory import MemoryDriver


def subscribed():
    driver = MemoryDriver()
    woken: list[str] = []
    subscription = driver.wake_subscribe(on_wake=woken.append)
    assert subscription is not None and subscription.is_live()
    return driver, subscription, woken


def test_due_enqueue_wakes_with_its_queue():
    driver, _, woken = subscribed()
    enqueue(driver, queue="mail")
    assert woken == ["mail"]


def test_delayed_scheduled_and_deduped_enqueues_do_not_wake():
    driver, _, woken = subscribed()
    enqueue(driver, delay_seconds=60)
    enqueue(driver, run_at=utcnow() - timedelta(seconds=1))
    first = enqueue(driver, queue="other", idempotency_key="k")
    woken.clear()
    repeat = request(queue="other", idempotency_key="k")
    assert driver.job_enqueue(request=repeat).id == first
    assert woken == []


def test_enqueue_many_wakes_once_per_queue():
    driver, _, woken = subscribed()
    requests = [request(queue=("a", "b")[n % 2]) for n in range(10)]
    requests.append(request(queue="c", delay_seconds=60))
    driver.job_enqueue_many(requests=requests)
    assert woken == ["a", "b"]


def test_on_wake_runs_outside_the_driver_lock():
    driver = MemoryDriver()
    seen: list[dict[str, int]] = []
    driver.wake_subscribe(on_wake=lambda queue: seen.append(driver.queue_demand(queues=[queue])))
    enqueue(driver)
    assert seen == [{"default": 1}]


def test_a_failing_on_wake_does_not_fail_the_enqueue():
    driver = MemoryDriver()

    def boom(queue: str) -> None:
        raise RuntimeError(queue)

    woken: list[str] = []
    driver.wake_subscribe(on_wake=boom)
    driver.wake_subscribe(on_wake=woken.append)
    enqueue(driver)
    assert woken == ["default"]


def test_close_stops_the_wakes():
    driver, subscription, woken = subscribed()
    subscription.close()
    assert not subscription.is_live()
    enqueue(driver)
    assert woken == []


def test_driver_close_closes_its_subscriptions():
    driver, subscription, woken = subscribed()
    driver.close()
    assert not subscription.is_live()
    enqueue(driver)
    assert woken == []
