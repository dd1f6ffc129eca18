"""The retention deletes (``drivers/retention_seam.py``), on both drivers: each reads one
cutoff, deletes at most ``limit`` rows oldest first, never a live job, a job's steps with it,
and its count agrees with what it deletes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.drivers.outbox_support import RELAY, OutboxCase, build_case
from tests.drivers.steps_support import done, running, shift_event_expiry, steps_of
from tests.drivers.support import HOUR, ack, enqueue, put_in_state, state_of, utcnow
from tests.drivers.support import request as job_request
from ultimat3_jobs.errors import StoreRefused
from ultimat3_jobs.types import JobState


@pytest.fixture(autouse=True)
def _capability(request: pytest.FixtureRequest) -> None:
    """Every driver of the parity suite keeps the retention methods."""
    if "driver" not in request.fixturenames:
        return
    driver = request.getfixturevalue("driver")
    assert driver.has_retention, f"the {driver.name} driver keeps the retention methods"


def finished(driver, state: str, n: int = 1) -> list:
    ids = [enqueue(driver) for _ in range(n)]
    for job_id in ids:
        put_in_state(driver, job_id, state)
    return ids


def test_the_clock_is_the_stores(driver) -> None:
    assert abs((driver.clock_now() - utcnow()).total_seconds()) < 5


@pytest.mark.parametrize("state", ["completed", "failed", "cancelled"])
def test_finished_jobs_of_one_state_go_in_bounded_batches(driver, state: str) -> None:
    doomed = finished(driver, state, 3)
    others = [s for s in ("completed", "failed", "cancelled") if s != state]
    kept = [finished(driver, other)[0] for other in others]
    live = [enqueue(driver), enqueue(driver, queue="other")]
    put_in_state(driver, live[1], "running")
    future = driver.clock_now() + HOUR
    past = driver.clock_now() - HOUR
    assert driver.job_count_finished(state=state, before=past, limit=10) == 0
    assert driver.job_purge_finished(state=state, before=past, limit=10) == 0
    assert driver.job_count_finished(state=state, before=future, limit=10) == 3
    assert driver.job_count_finished(state=state, before=future, limit=2) == 2
    assert driver.job_purge_finished(state=state, before=future, limit=2) == 2
    assert driver.job_purge_finished(state=state, before=future, limit=2) == 1
    assert driver.job_purge_finished(state=state, before=future, limit=2) == 0
    assert driver.job_purge_finished(state=state, before=future, limit=0) == 0
    assert [state_of(driver, job_id) for job_id in doomed] == [None, None, None]
    assert [state_of(driver, job_id) for job_id in kept] == others
    assert [state_of(driver, job_id) for job_id in live] == ["queued", "running"]


def test_the_oldest_finish_goes_first(driver) -> None:
    first, second = finished(driver, "completed", 2)
    assert driver.job_purge_finished(state="completed", before=driver.clock_now() + HOUR, limit=1)
    assert state_of(driver, first) is None
    assert state_of(driver, second) == "completed"


@pytest.mark.parametrize("state", ["queued", "running", "bogus"])
def test_a_live_or_unknown_state_is_refused(driver, state: str) -> None:
    enqueue(driver)
    for method in (driver.job_purge_finished, driver.job_count_finished):
        with pytest.raises(StoreRefused, match="finished state"):
            method(state=state, before=driver.clock_now() + HOUR, limit=10)


def test_a_limit_out_of_range_is_refused(driver) -> None:
    with pytest.raises(StoreRefused, match="limit"):
        driver.job_purge_finished(state="completed", before=driver.clock_now(), limit=10_001)


def test_a_purged_jobs_steps_go_with_it(driver) -> None:
    job = running(driver)
    assert done(driver, job, "a", 1)
    assert ack(driver, job.id, job.claim_token)
    assert set(steps_of(driver, job.id)) == {"a"}
    assert driver.job_purge_finished(
        state=JobState.COMPLETED, before=driver.clock_now() + HOUR, limit=10
    )
    assert steps_of(driver, job.id) == {}


def test_expired_events_go_by_the_passs_cutoff(driver) -> None:
    for n in range(3):
        driver.event_send(name="e", key=str(n), ttl_seconds=60)
    now = driver.clock_now()
    assert driver.event_count_expired(before=now, limit=10) == 0
    assert driver.events_purge_expired(limit=10, before=now) == 0
    later = now + timedelta(seconds=120)
    assert driver.event_count_expired(before=later, limit=10) == 3
    assert driver.event_count_expired(before=later, limit=2) == 2
    assert driver.events_purge_expired(limit=2, before=later) == 2
    assert driver.events_purge_expired(limit=10, before=later) == 1
    shift_event_expiry(driver, -120)  # nothing left to shift; the store's clock still works
    assert driver.events_purge_expired(limit=10) == 0


def test_old_counter_rows_go_oldest_first(driver) -> None:
    job_ids = finished(driver, "completed", 2)
    assert all(job_ids)
    now = driver.clock_now()
    assert driver.counter_count(before=now - HOUR, limit=10) == 0
    assert driver.counter_count(before=now + HOUR, limit=10) == 1
    assert driver.counter_purge(before=now - HOUR, limit=10) == 0
    assert driver.counter_purge(before=now + HOUR, limit=10) == 1
    assert driver.counter_total() == []


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.django_db)])
def outbox(request: pytest.FixtureRequest):
    yield from build_case(request.param)


def test_published_outbox_rows_go_by_the_passs_cutoff(outbox: OutboxCase) -> None:
    published, unpublished = outbox.stage(job_request(), job_request())
    outbox.claim()
    outbox.outbox.outbox_mark_published(relay_id=RELAY, ids=[published])
    store, past, future = outbox.outbox, utcnow() - HOUR, utcnow() + HOUR
    assert store.outbox_count_published(before=past, limit=10) == 0
    assert store.outbox_count_published(before=future, limit=10) == 1
    assert store.outbox_purge_published(retention_seconds=0, limit=10, before=past) == 0
    assert store.outbox_purge_published(retention_seconds=0, limit=10, before=future) == 1
    assert outbox.controls.row(published) is None
    assert outbox.row(unpublished)["published"] is False
