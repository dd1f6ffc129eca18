"""The hand of a single enqueue on Redis: a worker idle on the job's queue that listens for
hands gets the job claimed in its name and sent whole, and runs it without a claim of its own.
What must hold around it: the hand is a claim like any other (token, lease, attempt, fenced
writes), a worker is handed no more than its last claim left room for, a lost message comes
back with the worker's next claim (once), a stalled worker's hand is rescued when its lease
expires and then runs once elsewhere, and a stopping worker gives back a hand it never took."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, NamedTuple

import redis
from django.conf import settings

from tests.drivers.support import ack, claim, enqueue, rescue, state_of, utcnow
from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.base import WakeSubscription
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.types import ClaimedJob, JobState


class HandListener(NamedTuple):
    subscription: WakeSubscription
    woken: list[str]
    handed: list[ClaimedJob]


@contextlib.contextmanager
def hand_listener(driver: RedisDriver, worker_id: str) -> Iterator[HandListener]:
    """A live subscription for ``worker_id`` that takes hands, recording wakes and hands."""
    woken: list[str] = []
    handed: list[ClaimedJob] = []
    subscription = driver.wake_subscribe(
        on_wake=woken.append, worker_id=worker_id, on_hand=handed.append
    )
    assert subscription is not None
    try:
        wait_for(subscription.is_live, what="the wake going live")
        yield HandListener(subscription, woken, handed)
    finally:
        subscription.close()


@contextlib.contextmanager
def stalled_worker(driver: RedisDriver, worker_id: str) -> Iterator[None]:
    """A worker that subscribed for hands and never reads them (stalled, or its message lost
    in flight): Redis counts it as listening."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    pubsub = client.pubsub()
    pubsub.subscribe(f"{driver.prefix}:hand:{worker_id}")
    assert pubsub.get_message(timeout=5) is not None  # the subscription landed
    try:
        yield
    finally:
        pubsub.close()
        client.close()


def running_for(driver: RedisDriver, job_id: uuid.UUID, worker_id: str) -> uuid.UUID:
    """The claim token of ``job_id``, running for ``worker_id``."""
    record = driver.job_get(job_id=job_id)
    assert record is not None
    assert record.state is JobState.RUNNING, record.state
    assert record.worker_id == worker_id
    return uuid.UUID(driver.redis().hget(f"{driver.prefix}:job:{job_id}", "claim_token").decode())


def test_an_enqueue_hands_its_job_to_the_idle_worker_it_wakes(redis_store: RedisDriver):
    with hand_listener(redis_store, "worker-a") as a:
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        job_id = enqueue(redis_store, queue="emails")
        [job] = wait_for(lambda: list(a.handed), what="the hand")
        assert running_for(redis_store, job_id, "worker-a") == job.claim_token
        assert (job.id, job.queue, job.attempt) == (job_id, "emails", 1)
        record = redis_store.job_get(job_id=job_id)
        assert record is not None
        assert record.attempt == 1 and record.lease_expires_at is not None
        # The worker's next claim answers nothing more: the hand came by its message.
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        assert ack(redis_store, job.id, job.claim_token)
        assert a.woken == []


def test_a_lost_hand_comes_back_with_the_workers_next_claim_once(redis_store: RedisDriver):
    with stalled_worker(redis_store, "worker-x"):
        assert claim(redis_store, ["emails"], worker_id="worker-x") == []
        job_id = enqueue(redis_store, queue="emails")
        token = running_for(redis_store, job_id, "worker-x")
        [again] = claim(redis_store, ["emails"], worker_id="worker-x")
        assert (again.id, again.claim_token, again.attempt) == (job_id, token, 1)
        assert claim(redis_store, ["emails"], worker_id="worker-x") == []
        assert ack(redis_store, job_id, token)


def test_lost_hands_come_back_no_more_than_a_claim_asks_for(redis_store: RedisDriver):
    with stalled_worker(redis_store, "worker-x"):
        assert claim(redis_store, ["a", "b"], worker_id="worker-x", limit=2) == []
        handed = {enqueue(redis_store, queue="a"), enqueue(redis_store, queue="b")}
        tokens = {running_for(redis_store, job_id, "worker-x") for job_id in handed}
        first = claim(redis_store, ["a", "b"], worker_id="worker-x", limit=1)
        second = claim(redis_store, ["a", "b"], worker_id="worker-x", limit=1)
        assert len(first) == len(second) == 1
        assert {first[0].id, second[0].id} == handed
        assert {first[0].claim_token, second[0].claim_token} == tokens
        assert claim(redis_store, ["a", "b"], worker_id="worker-x") == []


def test_a_stalled_workers_hand_is_rescued_and_runs_once_elsewhere(redis_store: RedisDriver):
    with stalled_worker(redis_store, "worker-x"):
        assert claim(redis_store, ["emails"], worker_id="worker-x") == []
        job_id = enqueue(redis_store, queue="emails")
        stalled_token = running_for(redis_store, job_id, "worker-x")
        # Nobody runs it; its lease runs out and the rescue gives it back (a retry, counted as
        # for any claimed job of a lost worker).
        redis_store._set_times(job_id, lease_expires_at=utcnow() - timedelta(seconds=1))
        [rescued] = rescue(redis_store)
        assert (rescued.id, rescued.action) == (job_id, "retry")
        assert state_of(redis_store, job_id) is JobState.QUEUED
        [job] = claim(redis_store, ["emails"], worker_id="worker-b")
        assert (job.id, job.attempt) == (job_id, 2)
        assert not ack(redis_store, job_id, stalled_token)  # the stalled hand writes nothing
        assert ack(redis_store, job_id, job.claim_token)
        assert claim(redis_store, ["emails"], worker_id="worker-x") == []
        assert state_of(redis_store, job_id) is JobState.COMPLETED


def test_a_worker_is_handed_no_more_than_its_claim_left_room_for(redis_store: RedisDriver):
    with hand_listener(redis_store, "worker-a") as a:
        # One slot asked for, none found: idle on both queues, room for one job.
        assert claim(redis_store, ["emails", "math"], worker_id="worker-a", limit=1) == []
        first = enqueue(redis_store, queue="emails")
        second = enqueue(redis_store, queue="math")
        wait_for(lambda: a.handed and a.woken, what="a hand and a wake")
        assert [job.id for job in a.handed] == [first]
        assert a.woken == ["math"]  # woken to claim it, as before hands
        assert state_of(redis_store, second) is JobState.QUEUED


def test_no_hand_on_a_paused_queue_nor_to_a_busy_worker(redis_store: RedisDriver):
    with hand_listener(redis_store, "worker-a") as a:
        assert claim(redis_store, ["emails"], worker_id="worker-a") == []
        redis_store.pause_add(scope="queue", target="emails")
        paused = enqueue(redis_store, queue="emails")
        wait_for(lambda: a.woken, what="the wake")
        assert state_of(redis_store, paused) is JobState.QUEUED
        redis_store.pause_remove(scope="queue", target="emails")
        # A claim that took all it asked for lists the worker busy: no hand, no wake of its own.
        assert len(claim(redis_store, ["emails"], worker_id="worker-a", limit=1)) == 1
        busy = enqueue(redis_store, queue="emails")
        time.sleep(0.3)  # a hand or wake in flight lands well within this
        assert a.handed == []
        assert state_of(redis_store, busy) is JobState.QUEUED


def test_a_stopping_worker_gives_back_a_hand_it_never_took(redis_store: RedisDriver):
    redis_store.worker_heartbeat(
        worker_id="worker-x", host="h", pid=1, queues=["emails"], slots=1, ttl_seconds=60
    )
    with stalled_worker(redis_store, "worker-x"):
        assert claim(redis_store, ["emails"], worker_id="worker-x") == []
        job_id = enqueue(redis_store, queue="emails")
        running_for(redis_store, job_id, "worker-x")
        assert redis_store.worker_remove(worker_id="worker-x")
    record = redis_store.job_get(job_id=job_id)
    assert record is not None
    assert (record.state, record.attempt, record.worker_id) == (JobState.QUEUED, 0, None)
    [job] = claim(redis_store, ["emails"], worker_id="worker-b")
    assert (job.id, job.attempt) == (job_id, 1)


def test_a_worker_runs_handed_jobs_without_claiming_them(
    redis_worker: tuple[RedisDriver, Any],
) -> None:
    driver, make = redis_worker
    running = make(driver=driver, queues=("default",), start=False)
    handed: list[ClaimedJob] = []
    wake = running.worker._wake
    take = wake.take

    def counted(job: ClaimedJob) -> bool:
        handed.append(job)
        return take(job)

    wake.take = counted
    running.start()
    wait_for(lambda: running.worker.wake_live, what="the wake going live")
    results = []
    for n in range(5):
        assert running.worker.idle.wait(10)
        results.append(jobs.echo.enqueue(n=n))
        wait_for(lambda r=results[-1]: state_of(driver, r.id) is JobState.COMPLETED)
    for n, result in enumerate(results):
        record = driver.job_get(job_id=result.id)
        assert record is not None
        assert (record.attempt, record.result, record.errors) == (1, {"n": n}, [])
    assert {job.id for job in handed} & {result.id for result in results}
    running.stop()


def test_a_hand_to_a_stalled_worker_is_rescued_by_a_live_one_and_runs_once(
    redis_worker: tuple[RedisDriver, Any],
) -> None:
    driver, make = redis_worker
    with stalled_worker(driver, "worker-x"):
        assert claim(driver, ["default"], worker_id="worker-x", lease_seconds=1.0) == []
        result = jobs.echo.enqueue(n=7)
        running_for(driver, result.id, "worker-x")
        running = make(driver=driver, queues=("default",))
        wait_for(lambda: state_of(driver, result.id) is JobState.COMPLETED, what="the rescue")
    record = driver.job_get(job_id=result.id)
    assert record is not None
    # As for any claimed job of a lost worker, the expired lease counts as an attempt.
    assert (record.attempt, record.result, len(record.errors)) == (2, {"n": 7}, 1)
    assert record.worker_id != "worker-x"
    running.stop()
