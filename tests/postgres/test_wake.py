"""Enqueue wakes over LISTEN/NOTIFY: delivered at commit, dropped on rollback, one per queue per
batch, none for a delayed job; the listener proves its connection, survives losing it, and stops
when closed. NOTIFY is delivered at commit, so these tests run outside a test transaction."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection, connections, transaction

from tests.drivers.support import request
from tests.postgres.support import eventually, listener_pids
from tests.testapp.jobs import add, echo
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import ENQUEUE_CHUNK
from ultimat3_jobs.drivers.postgres import listen
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.listen import QueueListener
from ultimat3_jobs.drivers.postgres.wake import WakeThrottle

pytestmark = pytest.mark.django_db(transaction=True)

WAKE_WITHIN = 2.0
LIVE_WITHIN = 10.0


class Wakes:
    """An ``on_wake`` that records every queue it is called with."""

    def __init__(self) -> None:
        self.queues: list[str] = []
        self.woken = threading.Event()
        self._changed = threading.Condition()

    def __call__(self, queue: str) -> None:
        with self._changed:
            self.queues.append(queue)
            self._changed.notify_all()
        self.woken.set()

    def wait_for(self, queue: str, timeout: float = WAKE_WITHIN) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: queue in self.queues, timeout=timeout)

    def count(self, queue: str) -> int:
        with self._changed:
            return self.queues.count(queue)


@pytest.fixture
def subscribe() -> Iterator[Callable[[], tuple[QueueListener, Wakes]]]:
    """Open live subscriptions on a fresh driver (its own wake throttle); all closed after."""
    opened: list[QueueListener] = []

    def open_one() -> tuple[QueueListener, Wakes]:
        wakes = Wakes()
        subscription = PostgresDriver().wake_subscribe(on_wake=wakes)
        assert isinstance(subscription, QueueListener)
        opened.append(subscription)
        assert eventually(subscription.is_live, LIVE_WITHIN), "the listener never went live"
        return subscription, wakes

    try:
        yield open_one
    finally:
        for subscription in opened:
            subscription.close()


def test_committed_enqueue_wakes_with_the_queue_name(subscribe: Any) -> None:
    _, wakes = subscribe()
    add.enqueue(a=1, b=2)
    assert wakes.woken.wait(WAKE_WITHIN)
    assert wakes.queues == ["math"]


def test_rolled_back_enqueue_wakes_nobody(subscribe: Any) -> None:
    _, wakes = subscribe()
    with transaction.atomic():
        echo.enqueue(n=1)
        transaction.set_rollback(True)
    assert not wakes.woken.wait(1.0)
    # Notifications arrive in commit order: once a later commit's wake is in, the rolled-back
    # one would have been too.
    add.enqueue(a=1, b=2)
    assert wakes.wait_for("math")
    assert wakes.queues == ["math"]


def test_enqueue_many_wakes_once_per_queue(subscribe: Any) -> None:
    _, wakes = subscribe()
    requests = [request(queue="default" if n % 2 else "math", input_json="{}") for n in range(500)]
    results = get_driver().job_enqueue_many(requests=requests)
    assert all(result.created for result in results)
    add.using(queue="sentinel").enqueue(a=1, b=2)
    assert wakes.wait_for("sentinel")
    assert (wakes.count("default"), wakes.count("math")) == (1, 1)


def test_a_batch_of_several_chunks_wakes_its_queue_once_after_its_commit(subscribe: Any) -> None:
    _, wakes = subscribe()
    requests = [request(input_json="{}") for _ in range(2 * ENQUEUE_CHUNK + 1)]
    results = PostgresDriver().job_enqueue_many(requests=requests)
    assert all(result.created for result in results)
    with connection.cursor() as cursor:  # one transaction wrote the whole batch
        cursor.execute("select count(distinct xmin::text) from x_jobs")
        assert cursor.fetchone()[0] == 1
    add.using(queue="sentinel").enqueue(a=1, b=2)
    assert wakes.wait_for("sentinel")
    assert wakes.count("default") == 1


def test_an_enqueue_many_call_wakes_its_queue_once_at_commit_and_not_on_rollback(
    subscribe: Any,
) -> None:
    _, wakes = subscribe()
    _slow_throttle(60.0)  # a throttle of this test's own: its calls alone decide the wake
    with transaction.atomic():
        echo.enqueue_many([{"n": n} for n in range(5)])
        transaction.set_rollback(True)
    # In autocommit the call's one statement (job_enqueue_minted) sends the NOTIFY.
    results = echo.enqueue_many([{"n": n} for n in range(5)])
    assert all(result.created for result in results)
    add.using(queue="sentinel").enqueue(a=1, b=2)
    assert wakes.wait_for("sentinel")
    assert wakes.count("default") == 1


def test_delayed_enqueue_sends_no_wake(subscribe: Any) -> None:
    _, wakes = subscribe()
    echo.using(delay=60).enqueue(n=1)
    add.enqueue(a=1, b=2)
    assert wakes.wait_for("math")
    assert wakes.count("default") == 0


def _events(caplog: Any) -> list[str | None]:
    return [getattr(record, "event", None) for record in caplog.records]


def test_listener_reconnects_after_its_backend_is_killed(subscribe: Any, caplog: Any) -> None:
    subscription, wakes = subscribe()
    [pid] = listener_pids()
    with caplog.at_level(logging.INFO, logger="ultimat3_jobs.wake"):
        with connection.cursor() as cursor:
            cursor.execute("select pg_terminate_backend(%s)", [pid])
        assert eventually(lambda: not subscription.is_live(), 5.0)
        assert eventually(subscription.is_live, LIVE_WITHIN)
        # The listener logs ``jobs.wake.live`` just after it reads live: wait for the record too.
        assert eventually(lambda: "jobs.wake.live" in _events(caplog), 5.0), _events(caplog)
    assert "jobs.wake.lost" in _events(caplog)
    assert eventually(lambda: listener_pids() not in ([], [pid]), 5.0)
    add.enqueue(a=1, b=2)
    assert wakes.wait_for("math")


def test_closed_listener_stops_its_thread_and_hears_nothing(subscribe: Any) -> None:
    closing, closed_wakes = subscribe()
    _, open_wakes = subscribe()
    closing.close()
    assert not closing.thread.is_alive()
    assert not closing.is_live()
    assert eventually(lambda: len(listener_pids()) == 1, 5.0)
    echo.enqueue(n=1)
    assert open_wakes.wait_for("default")
    assert closed_wakes.queues == []


def test_close_cuts_the_wait_for_notifications_short(
    subscribe: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wait far longer than close() joins for: the thread stops only if close() wakes it.
    monkeypatch.setattr(listen, "POLL_SECONDS", 3600.0)
    listener, _ = subscribe()
    listener.close()
    assert not listener.thread.is_alive()


def test_close_from_inside_on_wake_does_not_deadlock(subscribe: Any) -> None:
    done = threading.Event()
    holder: list[QueueListener] = []

    def close_self(queue: str) -> None:
        holder[0].close()
        done.set()

    listener = PostgresDriver().wake_subscribe(on_wake=close_self)
    assert isinstance(listener, QueueListener)
    holder.append(listener)
    try:
        assert eventually(listener.is_live, LIVE_WITHIN)
        echo.enqueue(n=1)
        assert done.wait(WAKE_WITHIN)
        listener.thread.join(timeout=5.0)
        assert not listener.thread.is_alive()
    finally:
        listener.close()


def test_a_probe_that_never_comes_back_leaves_it_unproven(
    monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    def probe_lost(self: QueueListener, tokens: deque[str], wait_seconds: float) -> float:
        # What a transaction-pooling proxy does: LISTEN is accepted, the probe never arrives.
        tokens.append("never-sent")
        return time.monotonic() + wait_seconds

    monkeypatch.setattr(QueueListener, "_probe", probe_lost)
    monkeypatch.setattr(listen, "PROBE_TIMEOUT_SECONDS", 0.0)
    with caplog.at_level(logging.WARNING, logger="ultimat3_jobs.wake"):
        listener = PostgresDriver().wake_subscribe(on_wake=lambda queue: None)
        assert isinstance(listener, QueueListener)
        try:
            assert eventually(
                lambda: any(
                    getattr(record, "event", None) == "jobs.wake.unproven"
                    for record in caplog.records
                ),
                5.0,
            )
            assert not listener.is_live()
            assert listener.thread.is_alive()
        finally:
            listener.close()


def test_driver_close_closes_its_listeners() -> None:
    driver = PostgresDriver()
    listener = driver.wake_subscribe(on_wake=lambda queue: None)
    assert isinstance(listener, QueueListener)
    try:
        assert eventually(listener.is_live, LIVE_WITHIN)
        driver.close()
        assert not listener.is_live()
        assert not listener.thread.is_alive()
    finally:
        listener.close()


# -- the throttle counts a NOTIFY only once it is delivered --------------------------------------


def _slow_throttle(slot_seconds: float) -> None:
    """Give the enqueuing driver a throttle with a long slot, so that a test's enqueues all fall
    in one slot."""
    driver = get_driver()
    assert isinstance(driver, PostgresDriver)
    driver._wake_throttle = WakeThrottle(slot_seconds)


def test_a_rolled_back_enqueue_leaves_its_slot_to_the_next_one(subscribe: Any) -> None:
    _, wakes = subscribe()
    _slow_throttle(60.0)
    with transaction.atomic():
        echo.enqueue(n=1)
        transaction.set_rollback(True)
    echo.enqueue(n=2)  # autocommit, in the same slot
    assert wakes.wait_for("default"), "the rolled-back NOTIFY took the slot's only wake"
    assert wakes.count("default") == 1


def test_an_open_transaction_does_not_silence_the_slot(subscribe: Any) -> None:
    _, wakes = subscribe()
    _slow_throttle(60.0)

    def enqueue_elsewhere() -> None:
        try:
            echo.enqueue(n=2)  # autocommit, from another connection, in the same slot
        finally:
            connections.close_all()

    with transaction.atomic():
        echo.enqueue(n=1)
        other = threading.Thread(target=enqueue_elsewhere)
        other.start()
        other.join(10)
        assert wakes.wait_for("default"), "a job committed while a transaction held the slot"


def test_a_transaction_committing_after_its_slot_still_wakes(subscribe: Any) -> None:
    _, wakes = subscribe()
    slot = 0.5
    _slow_throttle(slot)
    time.sleep(slot - time.monotonic() % slot + 0.01)  # start at the beginning of a slot
    echo.enqueue(n=1)  # autocommit: this slot's wake
    assert wakes.wait_for("default")
    with transaction.atomic():
        echo.enqueue(n=2)  # same slot as the first
        time.sleep(slot + 0.1)  # the slot ends before the commit
    assert eventually(lambda: wakes.count("default") == 2, WAKE_WITHIN), (
        "a job committed after its enqueue's slot ended never woke anyone"
    )


def test_enqueues_in_one_transaction_wake_once_after_the_commit(subscribe: Any) -> None:
    _, wakes = subscribe()
    _slow_throttle(60.0)
    with transaction.atomic():
        for n in range(20):
            echo.enqueue(n=n)
        get_driver().job_enqueue_many(requests=[request(input_json="{}") for _ in range(20)])
        assert not wakes.woken.wait(0.3)
    add.using(queue="sentinel").enqueue(a=1, b=2)
    assert wakes.wait_for("sentinel")
    assert wakes.count("default") == 1
