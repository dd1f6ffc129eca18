"""The outbox seam's parity suite: every test runs on ``MemoryOutbox`` and ``PostgresOutbox``
(``drivers/outbox_store.py``'s ``OutboxStore`` docstrings are what it checks), the relay included.

Time moves by rewriting a row's lease or publish time (the store controls of
``outbox_support.py``); the one test of a real lease ending waits well under a second."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from django.db import transaction

from tests.drivers.outbox_support import (
    OTHER_RELAY,
    RELAY,
    OutboxCase,
    RunningRelay,
    build_case,
    close_to,
    in_thread,
    wait_until,
)
from tests.drivers.support import HOUR, claim, request, utcnow
from ultimat3_jobs.types import JobState

pytestmark = pytest.mark.django_db

KINDS = [pytest.param("memory", id="memory"), pytest.param("postgres", id="postgres")]


@pytest.fixture(params=KINDS)
def outbox(request: pytest.FixtureRequest) -> Iterator[OutboxCase]:
    yield from build_case(request.param)


def rolled_back() -> RuntimeError:
    return RuntimeError("roll back")


# -- stage and claim ------------------------------------------------------------------------------


def test_a_staged_row_is_claimed_with_every_column_it_publishes(outbox: OutboxCase) -> None:
    staged = request(
        name="tests.echo",
        queue="emails",
        input_json='{"n": 7, "s": "\\u00e9"}',
        priority=5,
        idempotency_key="order-1",
        tenant_id="org-1",
        enqueued_by="user:1",
        max_attempts=4,
        lease_seconds=90,
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    )
    outbox.stage(staged)
    [claimed] = outbox.claim()
    assert claimed.id == staged.id
    assert (claimed.name, claimed.queue, claimed.priority) == ("tests.echo", "emails", 5)
    assert (claimed.idempotency_key, claimed.tenant_id, claimed.enqueued_by) == (
        "order-1",
        "org-1",
        "user:1",
    )
    assert (claimed.max_attempts, claimed.lease_seconds) == (4, 90)
    assert claimed.traceparent == staged.traceparent
    assert outbox.driver.job_enqueue(request=claimed).status == "created"
    record = outbox.driver.job_get(job_id=staged.id)
    assert record is not None and record.input == {"n": 7, "s": "é"}
    # Due at the stage: it carries no run_at, so it is due when published.
    assert (claimed.run_at, claimed.delay_seconds) == (None, None)


def test_a_staged_delay_or_run_at_is_kept(outbox: OutboxCase) -> None:
    at = (utcnow() + 2 * HOUR).replace(microsecond=123456)
    before = utcnow()
    delayed = outbox.stage_one(delay_seconds=3600)
    dated = outbox.stage_one(run_at=at)
    past = outbox.stage_one(run_at=utcnow() - HOUR)
    claimed = {r.id: r for r in outbox.claim()}
    assert close_to(claimed[delayed].run_at, before + HOUR)
    assert claimed[delayed].delay_seconds is None
    assert claimed[dated].run_at == at
    assert claimed[past].run_at is None
    outbox.driver.job_enqueue_many(requests=list(claimed.values()))
    record = outbox.driver.job_get(job_id=delayed)
    assert record is not None and record.run_at == claimed[delayed].run_at


def test_claim_takes_the_oldest_first_up_to_its_limit(outbox: OutboxCase) -> None:
    first = outbox.stage(request(), request())
    later = [outbox.stage_one() for _ in range(3)]
    staged = [*first, *later]
    assert outbox.claim_ids(limit=2) == staged[:2]
    assert outbox.claim_ids(limit=2) == staged[2:4]
    assert outbox.claim_ids(limit=2) == staged[4:]
    assert outbox.claim_ids(limit=2) == []


def test_a_row_another_relay_holds_is_skipped(outbox: OutboxCase) -> None:
    held = outbox.stage_one()
    assert outbox.claim_ids(RELAY) == [held]
    assert outbox.claim_ids(OTHER_RELAY) == []
    assert outbox.claim_ids(RELAY) == []  # the holder itself does not take it twice
    free = outbox.stage_one()
    assert outbox.claim_ids(OTHER_RELAY) == [free]


def test_a_row_whose_lease_ended_is_taken_again_and_only_its_new_holder_marks_it(
    outbox: OutboxCase,
) -> None:
    job_id = outbox.stage_one()
    assert outbox.claim_ids(RELAY) == [job_id]
    outbox.controls.expire_lease(job_id)
    assert outbox.claim_ids(OTHER_RELAY) == [job_id]
    assert outbox.row(job_id)["relay_id"] == OTHER_RELAY
    assert outbox.outbox.outbox_mark_published(relay_id=RELAY, ids=[job_id]) == set()
    assert outbox.outbox.outbox_mark_published(relay_id=OTHER_RELAY, ids=[job_id]) == {job_id}


@pytest.mark.django_db(transaction=True)
def test_a_short_lease_ends_on_the_stores_clock(outbox: OutboxCase) -> None:
    job_id = outbox.stage_one()
    assert outbox.claim_ids(RELAY, lease_seconds=0.3) == [job_id]
    assert outbox.claim_ids(OTHER_RELAY) == []
    time.sleep(0.5)
    assert outbox.claim_ids(OTHER_RELAY) == [job_id]


@pytest.mark.django_db(transaction=True)
def test_relays_claiming_at_once_never_share_a_row(outbox: OutboxCase) -> None:
    staged = outbox.stage(*(request() for _ in range(60)))
    taken: list[list[object]] = [[] for _ in range(4)]
    start = threading.Barrier(4)

    def relay(index: int) -> None:
        start.wait(10)
        while batch := outbox.claim_ids(f"relay-{index}", limit=3):
            taken[index].extend(batch)
            time.sleep(0.002)  # let the others in between batches

    threads = [threading.Thread(target=in_thread, args=(lambda i=i: relay(i),)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    every = [job_id for batch in taken for job_id in batch]
    assert sorted(every) == sorted(staged)  # each row once, none lost


# -- the caller's transaction ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_staged_rows_are_claimable_at_the_commit_not_before(outbox: OutboxCase) -> None:
    with transaction.atomic():
        job_id = outbox.stage_one()
        assert in_thread(outbox.claim_ids) == []
    assert in_thread(outbox.claim_ids) == [job_id]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_stage_is_never_claimed(outbox: OutboxCase) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        job_id = outbox.stage_one()
        raise rolled_back()
    assert outbox.claim_ids() == []
    assert outbox.controls.row(job_id) is None


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_savepoint_drops_only_its_own_rows(outbox: OutboxCase) -> None:
    with transaction.atomic():
        kept = outbox.stage_one()
        with pytest.raises(RuntimeError), transaction.atomic():
            outbox.stage_one()
            raise rolled_back()
        also_kept = outbox.stage_one()
    assert outbox.claim_ids() == [kept, also_kept]


@pytest.mark.django_db(transaction=True)
def test_a_row_staged_first_is_claimed_first_though_it_commits_last(outbox: OutboxCase) -> None:
    # No "last id seen" mark: order is the stage's, and a late commit is still found.
    with transaction.atomic():
        early = outbox.stage_one()
        late = in_thread(outbox.stage_one)
        assert in_thread(outbox.claim_ids) == [late]
    outbox.controls.expire_lease(late)
    assert outbox.claim_ids() == [early, late]


@pytest.mark.django_db(transaction=True)
def test_the_staging_transaction_sees_its_rows_as_the_flag_says(outbox: OutboxCase) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        job_id = outbox.stage_one()
        seen = outbox.claim_ids() == [job_id]
        assert seen is outbox.outbox.stage_visible_in_transaction
        raise rolled_back()
    assert outbox.claim_ids() == []


@pytest.mark.django_db(transaction=True)
def test_a_committed_stage_with_notify_wakes_a_subscriber(outbox: OutboxCase) -> None:
    woken = threading.Event()
    subscription = outbox.outbox.wake_subscribe(on_wake=lambda _: woken.set())
    assert subscription is not None
    try:
        wait_until(subscription.is_live)
        with pytest.raises(RuntimeError), transaction.atomic():
            outbox.stage(request(), notify=True)
            raise rolled_back()
        with transaction.atomic():
            outbox.stage(request(), notify=True)
            assert not woken.wait(0.2), "woken before the commit"
        assert woken.wait(5)
    finally:
        subscription.close()
    assert not subscription.is_live()


# -- mark, record a failure, purge ----------------------------------------------------------------


def test_a_published_row_is_marked_once_and_never_claimed_again(outbox: OutboxCase) -> None:
    job_id, other = outbox.stage(request(), request())
    assert sorted(outbox.claim_ids()) == sorted([job_id, other])
    mark = outbox.outbox.outbox_mark_published
    assert mark(relay_id=OTHER_RELAY, ids=[job_id]) == set()
    assert mark(relay_id=RELAY, ids=[]) == set()
    assert mark(relay_id=RELAY, ids=[job_id]) == {job_id}
    assert mark(relay_id=RELAY, ids=[job_id, other]) == {other}
    assert outbox.row(job_id)["published"] is True
    outbox.controls.expire_lease(job_id)
    assert outbox.claim_ids(OTHER_RELAY) == []


def test_a_failed_publish_is_counted_kept_and_retried_after_its_pause(outbox: OutboxCase) -> None:
    job_id = outbox.stage_one()
    assert outbox.claim_ids() == [job_id]
    record = outbox.outbox.outbox_record_failure
    error = "ValueError: " + "x" * 5000
    assert record(relay_id=OTHER_RELAY, job_id=job_id, error="no", retry_seconds=60) is False
    assert record(relay_id=RELAY, job_id=job_id, error=error, retry_seconds=60) is True
    row = outbox.row(job_id)
    assert (row["publish_attempts"], row["last_error"]) == (1, error[:2000])
    assert outbox.claim_ids(OTHER_RELAY) == []  # held back for the pause
    outbox.controls.expire_lease(job_id)
    assert outbox.claim_ids(OTHER_RELAY) == [job_id]
    outbox.outbox.outbox_mark_published(relay_id=OTHER_RELAY, ids=[job_id])
    assert record(relay_id=OTHER_RELAY, job_id=job_id, error="late", retry_seconds=1) is False
    assert outbox.row(job_id)["publish_attempts"] == 1


def test_an_error_postgresql_text_cannot_hold_is_kept_readable(outbox: OutboxCase) -> None:
    # A refusal quoting a NUL or a lone surrogate once made the record itself fail, so the
    # relay took the row for a lost store and the rest of its batch waited for the lease.
    job_id = outbox.stage_one()
    outbox.claim()
    error = "DataError: bad byte \x00 and \udc80 in the message"
    record = outbox.outbox.outbox_record_failure
    assert record(relay_id=RELAY, job_id=job_id, error=error, retry_seconds=60) is True
    row = outbox.row(job_id)
    assert row["last_error"] == "DataError: bad byte \ufffd and ? in the message"


def test_purge_deletes_published_rows_past_their_retention_in_batches(outbox: OutboxCase) -> None:
    old, older, recent, unpublished = outbox.stage(*(request() for _ in range(4)))
    outbox.claim()
    outbox.outbox.outbox_mark_published(relay_id=RELAY, ids=[old, older, recent])
    purge = outbox.outbox.outbox_purge_published
    assert purge(retention_seconds=3600, limit=10) == 0
    outbox.controls.backdate_published(old, 2 * HOUR)
    outbox.controls.backdate_published(older, 3 * HOUR)
    assert purge(retention_seconds=3600, limit=1) == 1
    assert purge(retention_seconds=3600, limit=10) == 1
    assert purge(retention_seconds=3600, limit=10) == 0
    assert outbox.controls.row(old) is None and outbox.controls.row(older) is None
    assert outbox.row(recent)["published"] is True
    assert outbox.row(unpublished)["published"] is False


# -- the relay, speaking only the seam ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_relay_publishes_committed_rows_with_their_ids_times_and_trace(
    outbox: OutboxCase,
) -> None:
    trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    before = utcnow()
    with transaction.atomic():
        due = outbox.stage_one(traceparent=trace)
        delayed = outbox.stage_one(delay_seconds=3600)
    with pytest.raises(RuntimeError), transaction.atomic():
        dropped = outbox.stage_one()
        raise rolled_back()
    with RunningRelay(outbox) as relay:
        wait_until(lambda: relay.published_count == 2)
    due_job = outbox.driver.job_get(job_id=due)
    delayed_job = outbox.driver.job_get(job_id=delayed)
    assert due_job is not None and due_job.state == JobState.QUEUED
    [running] = claim(outbox.driver)  # the delayed one is not due
    assert (running.id, running.traceparent) == (due, trace)
    assert delayed_job is not None and close_to(delayed_job.run_at, before + HOUR)
    assert outbox.driver.job_get(job_id=dropped) is None
    assert outbox.row(due)["published"] and outbox.row(delayed)["published"]
    assert outbox.claim_ids() == []


@pytest.mark.django_db(transaction=True)
def test_a_row_published_twice_makes_one_job(outbox: OutboxCase) -> None:
    job_id = outbox.stage_one(name="tests.twice")
    # A relay published the row, then died before marking it.
    claimed = outbox.claim(RELAY)
    assert [r.status for r in outbox.driver.job_enqueue_many(requests=claimed)] == ["created"]
    outbox.controls.expire_lease(job_id)
    with RunningRelay(outbox) as relay:
        wait_until(lambda: relay.published_count == 1)
    assert outbox.row(job_id)["published"] is True
    page = outbox.driver.job_list(names=["tests.twice"])
    assert [job.id for job in page.jobs] == [job_id]
    # The dead relay's late mark lands nowhere.
    assert outbox.outbox.outbox_mark_published(relay_id=RELAY, ids=[job_id]) == set()


@pytest.mark.django_db(transaction=True)
def test_the_relay_keeps_a_row_the_job_store_refuses_and_publishes_the_rest(
    outbox: OutboxCase,
) -> None:
    good_first, refused, good_last = outbox.stage(request(), request(priority=999), request())
    with RunningRelay(outbox) as relay:
        wait_until(lambda: relay.published_count == 2)
    assert outbox.row(good_first)["published"] and outbox.row(good_last)["published"]
    row = outbox.row(refused)
    assert not row["published"]
    assert row["publish_attempts"] == 1 and "priority" in row["last_error"]
    assert outbox.driver.job_get(job_id=refused) is None
    assert outbox.claim_ids(OTHER_RELAY) == []  # held back for the retry pause
