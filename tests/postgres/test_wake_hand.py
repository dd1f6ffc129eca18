"""A wake that names its job: an autocommit enqueue's NOTIFY carries the job's id, and the
subscription of a worker whose last claim found fewer jobs than it asked for claims that row by
primary key (fenced as every claim is) and hands it over, in place of a wake. A notified job it
cannot take, or a worker that is not idle, gets the plain wake: the worker's own claim follows."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.db.backends.signals import connection_created

from tests.drivers.support import ack, claim, claim_one, enqueue, rescue
from tests.postgres.support import eventually, listener_pids, terminate_backend
from ultimat3_jobs.drivers.postgres import listen, registry
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.listen import LISTEN_APPLICATION_NAME, thread_session
from ultimat3_jobs.drivers.postgres.notified import claim_notified
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


# -- the claim on the listening connection (notified.py) ----------------------------------------


def test_a_hand_opens_no_django_connection_on_the_listeners_thread(
    driver: PostgresDriver,
) -> None:
    """The claim runs on the connection the listener already holds: no second session per
    worker, no Django cursor on the wake's path."""
    opened_on: list[str] = []

    def opened(sender: object, **kwargs: object) -> None:
        opened_on.append(threading.current_thread().name)

    connection_created.connect(opened, dispatch_uid="test_wake_hand.opened")
    try:
        assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=LEASE) == []
        heard = _subscribe(driver)
        job_id = enqueue(driver)
        assert eventually(lambda: len(heard.hands) == 1, WITHIN)
    finally:
        connection_created.disconnect(dispatch_uid="test_wake_hand.opened")
    assert heard.hands[0].id == job_id
    assert LISTEN_APPLICATION_NAME not in opened_on


def test_the_handed_job_reads_as_the_row_and_a_claim_of_it_does(driver: PostgresDriver) -> None:
    assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=LEASE) == []
    heard = _subscribe(driver)
    job_id = enqueue(driver, input_json='{"n": [1, "two"]}', priority=3)
    assert eventually(lambda: len(heard.hands) == 1, WITHIN)
    (job,) = heard.hands
    with connection.cursor() as cursor:
        cursor.execute(
            "select claim_token, lease_expires_at, created_at, attempt, priority from x_jobs"
            " where id = %s",
            [job_id],
        )
        token, lease_expires_at, created_at, attempt, priority = cursor.fetchone()
    assert isinstance(job.id, uuid.UUID) and isinstance(job.claim_token, uuid.UUID)
    assert job.claim_token == token and job.attempt == attempt == 1
    assert job.input == {"n": [1, "two"]} and job.priority == priority == 3
    assert 40 < (lease_expires_at - created_at).total_seconds() < 50  # LEASE from the claim


def test_wakes_read_together_are_each_delivered_around_the_claim(driver: PostgresDriver) -> None:
    """Two wakes in one read: the first is claimed on the connection the second was read from
    (the reading must have let go of it), the second is delivered after, as a wake."""
    first = enqueue(driver, delay_seconds=3600.0)
    second = enqueue(driver, delay_seconds=3600.0)
    assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=LEASE) == []  # none due yet
    with connection.cursor() as cursor:
        cursor.execute("update x_jobs set run_at = now() - interval '1 second'")
    heard = _subscribe_then_notify(driver, [f"default {first}", f"default {second}"])
    assert eventually(lambda: len(heard.hands) == 1 and heard.queues == ["default"], WITHIN)
    assert heard.hands[0].id == first and _row(second)[0] == "queued"


def test_a_rolled_back_enqueue_hands_nothing(driver: PostgresDriver) -> None:
    assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=LEASE) == []
    heard = _subscribe(driver)
    job_id = None
    with pytest.raises(RuntimeError), transaction.atomic():
        job_id = enqueue(driver)
        raise RuntimeError("roll back")
    assert not heard.any.wait(0.5)
    assert heard.hands == [] and heard.queues == []
    with connection.cursor() as cursor:
        cursor.execute("select count(*) from x_jobs where id = %s", [job_id])
        assert cursor.fetchone()[0] == 0
    later = enqueue(driver)  # the worker is still listed idle: the next enqueue is handed
    assert eventually(lambda: [job.id for job in heard.hands] == [later], WITHIN)


def test_a_claim_on_a_lost_connection_leaves_the_wake_and_the_listener_comes_back(
    driver: PostgresDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listening session dies between the wake's read and its claim: the claim fails, the
    wake is delivered (the worker's own claim takes the job), the listener reconnects and the
    next idle claim's wake is handed again."""
    killed: list[int] = []

    def killing_claim(session: Any, **kwargs: Any) -> ClaimedJob | None:
        if not killed:
            killed.append(session.info.backend_pid)
            terminate_backend(killed[0])
        return claim_notified(session, **kwargs)

    heard = _idle_with_claim(driver, monkeypatch, killing_claim)
    job_id = enqueue(driver)
    assert eventually(lambda: heard.queues == ["default"], WITHIN)
    assert heard.hands == [] and _row(job_id)[:2] == ("queued", None)
    assert [job.id for job in claim(driver, limit=4, worker_id=WORKER)] == [job_id]  # the poll's
    assert eventually(lambda: listener_pids() not in ([], killed), LIVE_WITHIN)
    assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=LEASE) == []  # idle again
    time.sleep(0.06)  # past the first enqueue's wake slot
    again = enqueue(driver)
    assert eventually(lambda: [job.id for job in heard.hands] == [again], LIVE_WITHIN)


def test_a_job_claimed_for_a_worker_that_dies_before_its_body_is_rescued_once(
    driver: PostgresDriver,
) -> None:
    """The listener claims the job and the process dies before the body starts (the hand goes
    nowhere): the row is running under the idle claim's lease, rescued at its end, and claimed
    and settled once more; the dead attempt's token lands nothing."""
    assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=1.0) == []
    dropped: list[ClaimedJob] = []
    subscription = driver.wake_subscribe(
        on_wake=lambda queue: None, worker_id=WORKER, on_hand=dropped.append
    )
    assert subscription is not None
    assert eventually(subscription.is_live, LIVE_WITHIN)
    job_id = enqueue(driver)
    assert eventually(lambda: len(dropped) == 1, WITHIN)
    subscription.close()  # the process is gone: nothing settles, heartbeats or releases it
    assert _row(job_id)[:2] == ("running", WORKER)
    assert rescue(driver) == []  # not before the lease ends
    time.sleep(1.2)
    assert [job.id for job in rescue(driver)] == [job_id]
    assert _row(job_id)[0] == "queued"
    again = claim_one(driver, worker_id="survivor", lease_seconds=LEASE)
    assert again.id == job_id and again.claim_token != dropped[0].claim_token
    assert not ack(driver, job_id, dropped[0].claim_token)  # the dead attempt lands nothing
    assert ack(driver, job_id, again.claim_token)
    assert _row(job_id)[0] == "completed"


def _subscribe_then_notify(driver: PostgresDriver, payloads: list[str]) -> Heard:
    """A live subscription, then ``payloads`` sent in one transaction (read together)."""
    heard = _subscribe(driver)
    with transaction.atomic(), connection.cursor() as cursor:
        for payload in payloads:
            cursor.execute("select pg_notify(%s, %s)", [WAKE_CHANNEL, payload])
    return heard


def test_a_wake_read_during_a_claim_is_delivered_without_waiting_for_the_poll(
    driver: PostgresDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notification that comes while the listener's claim runs is read by that claim's
    statement and kept back by psycopg; the socket then has nothing to wake the wait, so the
    listener must look at what was kept before it waits (the poll here: half a minute)."""
    monkeypatch.setattr(listen, "POLL_SECONDS", 30.0)
    second = enqueue(driver, delay_seconds=3600.0)  # not due: the idle claim leaves it

    def claim_then_another_wake(session: Any, **kwargs: Any) -> ClaimedJob | None:
        if kwargs["job_id"] != second:
            with connection.cursor() as cursor:  # committed before the claim is sent
                cursor.execute(
                    "update x_jobs set run_at = now() - interval '1 second' where id = %s",
                    [second],
                )
            _notify(f"default {second}")
            connections["default"].close()
        return claim_notified(session, **kwargs)

    heard = _idle_with_claim(driver, monkeypatch, claim_then_another_wake)
    first = enqueue(driver)
    assert eventually(lambda: len(heard.hands) == 1, WITHIN)
    assert heard.hands[0].id == first
    assert eventually(lambda: heard.queues == ["default"], WITHIN)  # the second: not handed


HANDS = 6
"""Hands in a row: past psycopg's default ``prepare_threshold`` (5), which would prepare by count
a statement the claim ran unprepared."""


def test_the_claim_is_prepared_on_the_listening_session_unless_the_alias_opts_out(
    driver: PostgresDriver, threshold: Any
) -> None:
    """Planned once per connection, though by default the alias asks for no prepared statements
    (the listening session is proven a session of its own); planned on every run, never
    prepared, when the alias states ``"prepare_threshold": None``."""
    prepared: list[tuple[str, int]] = []

    def hand(job: ClaimedJob) -> None:
        session = thread_session()
        assert session is not None  # on the listener's thread, between two waits
        prepared[:] = session.execute(
            "select statement, generic_plans + custom_plans from pg_prepared_statements",
            prepare=False,
        ).fetchall()
        handed.append(job)

    handed: list[ClaimedJob] = []
    subscription = driver.wake_subscribe(on_wake=lambda queue: None, worker_id=WORKER, on_hand=hand)
    assert subscription is not None
    assert eventually(subscription.is_live, LIVE_WITHIN)
    for n in range(1, HANDS + 1):
        assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=LEASE) == []  # idle
        time.sleep(0.06)  # past the last enqueue's wake slot: this one notifies
        enqueue(driver)
        assert eventually(lambda n=n: len(handed) == n, WITHIN)
    if threshold is None:
        assert prepared == []
        return
    ((statement, runs),) = prepared
    assert "for update of j skip locked" in statement and runs == HANDS


def _idle_with_claim(
    driver: PostgresDriver, monkeypatch: pytest.MonkeyPatch, claim_with: Any
) -> Heard:
    """The worker listed idle, its wakes' claims run through ``claim_with``, subscribed."""
    monkeypatch.setattr(registry, "claim_notified", claim_with)
    assert claim(driver, limit=4, worker_id=WORKER, lease_seconds=LEASE) == []
    return _subscribe(driver)
