"""A wake that names its job: an autocommit enqueue's NOTIFY carries the job's id, and the
subscription of a worker whose last claim found fewer jobs than it asked for claims that row by
primary key (fenced as every claim is) and hands it over, in place of a wake. A notified job it
cannot take, or a worker that is not idle, gets the plain wake: the worker's own claim follows."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from tests.drivers.support import claim, claim_one, enqueue
from tests.postgres.support import eventually
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.params import WAKE_CHANNEL
from ultimat3_jobs.types import ClaimedJob

pytestmark = pytest.mark.django_db(transaction=True)

WITHIN = 2.0
LIVE_WITHIN = 10.0
WORKER = "w-hand"
LEASE = 45.0


class Heard:
    """The wakes and the hands one subscription delivered."""

    def __init__(self) -> None:
        self.queues: list[str] = []
        self.hands: list[ClaimedJob] = []
        self.any = threading.Event()

    def wake(self, queue: str) -> None:
        self.queues.append(queue)
        self.any.set()

    def hand(self, job: ClaimedJob) -> None:
        self.hands.append(job)
        self.any.set()


@pytest.fixture
def driver() -> Iterator[PostgresDriver]:
    opened = PostgresDriver()
    try:
        yield opened
    finally:
        opened.close()


def _subscribe(driver: PostgresDriver) -> Heard:
    heard = Heard()
    subscription = driver.wake_subscribe(on_wake=heard.wake, worker_id=WORKER, on_hand=heard.hand)
    assert subscription is not None
    assert eventually(subscription.is_live, LIVE_WITHIN), "the listener never went live"
    return heard


def _row(job_id: uuid.UUID) -> tuple[str, str | None, Any]:
    with connection.cursor() as cursor:
        cursor.execute("select state, worker_id, claim_token from x_jobs where id = %s", [job_id])
        return cursor.fetchone()


def _notify(payload: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("select pg_notify(%s, %s)", [WAKE_CHANNEL, payload])


def test_an_idle_worker_is_handed_the_job_its_wake_names(driver: PostgresDriver) -> None:
    assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=LEASE) == []  # idle now
    heard = _subscribe(driver)
    job_id = enqueue(driver)
    assert heard.any.wait(WITHIN)
    assert eventually(lambda: len(heard.hands) == 1, WITHIN)
    (job,) = heard.hands
    assert job.id == job_id and job.attempt == 1
    assert _row(job_id) == ("running", WORKER, job.claim_token)
    assert heard.queues == []  # the hand wakes the worker; no second wake


def test_one_hand_per_idle_claim(driver: PostgresDriver) -> None:
    assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=LEASE) == []
    heard = _subscribe(driver)
    first = enqueue(driver)
    assert eventually(lambda: len(heard.hands) == 1, WITHIN)
    time.sleep(0.06)  # past the enqueue's wake slot: the next enqueue notifies too
    second = enqueue(driver)
    assert eventually(lambda: heard.queues == ["default"], WITHIN)
    assert [job.id for job in heard.hands] == [first]
    assert _row(second)[0] == "queued"  # the worker's own claim takes it


@pytest.mark.parametrize("why", ["taken", "paused name", "other queue"])
def test_a_notified_job_it_cannot_take_falls_back_to_the_wake(
    driver: PostgresDriver, why: str
) -> None:
    queue = "elsewhere" if why == "other queue" else "default"
    job_id = _enqueue_quietly(driver, queue)
    before = None
    if why == "taken":
        before = claim_one(driver, (queue,), worker_id="other", lease_seconds=LEASE)
    if why == "paused name":
        driver.pause_add(scope="job", target="tests.echo")
    assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=LEASE) == []
    heard = _subscribe(driver)
    _notify(f"{queue} {job_id}")
    assert heard.any.wait(WITHIN)
    assert heard.queues == [queue] and heard.hands == []
    if before is not None:
        assert _row(job_id) == ("running", "other", before.claim_token)
    else:
        assert _row(job_id)[:2] == ("queued", None)


def test_a_worker_whose_last_claim_was_full_gets_the_wake_alone(driver: PostgresDriver) -> None:
    job_id = _enqueue_quietly(driver, "default")
    assert len(claim(driver, limit=1, worker_id=WORKER, lease_seconds=LEASE)) == 1  # busy
    waiting = _enqueue_quietly(driver, "default")
    heard = _subscribe(driver)
    _notify(f"default {waiting}")
    assert heard.any.wait(WITHIN)
    assert heard.queues == ["default"] and heard.hands == []
    assert _row(waiting)[:2] == ("queued", None) and _row(job_id)[0] == "running"


def _enqueue_quietly(driver: PostgresDriver, queue: str) -> uuid.UUID:
    """A due job written without a wake (a future job made due), so the test sends its own."""
    job_id = enqueue(driver, queue=queue, delay_seconds=3600.0)
    with connection.cursor() as cursor:
        cursor.execute(
            "update x_jobs set run_at = now() - interval '1 second' where id = %s", [job_id]
        )
    return job_id
