"""The event bus, on every driver: event_send ends the waits it matches in one write, by the
store's clock; events_purge_expired deletes what expired, counted."""

from __future__ import annotations

from tests.drivers.steps_support import (
    running,
    shift_event_expiry,
    shift_events,
    shift_wait,
    steps_of,
    wait,
)
from tests.drivers.support import claim, get, request, wakes_of
from ultimat3_jobs.types import JobState


def _suspended(driver, **kwargs):
    job = running(driver)
    wait(driver, job, "w", **kwargs)
    assert driver.job_suspend(job_id=job.id, claim_token=job.claim_token, step="w")
    return job


def test_an_event_sent_after_the_wait_ends_it_and_makes_the_job_due(driver):
    job = _suspended(driver, event="paid", key="order-1")
    assert claim(driver) == []
    sent = driver.event_send(
        name="paid", key="order-1", payload_json='{"amount":5}', ttl_seconds=60
    )
    assert sent.ended == 1
    step = steps_of(driver, job.id)["w"]
    assert (step.status, step.output) == ("done", {"amount": 5})
    (again,) = claim(driver)
    assert again.id == job.id
    resolved = driver.step_wait_resolve(job_id=job.id, claim_token=again.claim_token, name="w")
    assert (resolved.status, resolved.output) == ("done", {"amount": 5})


def test_an_event_sent_before_the_wait_began_does_not_match(driver):
    driver.event_send(name="paid", key="order-1", payload_json="1", ttl_seconds=60)
    shift_events(driver, -5)
    job = _suspended(driver, event="paid", key="order-1")
    assert get(driver, job.id).state == JobState.QUEUED
    assert claim(driver) == [], "an earlier event does not wake the wait"
    assert steps_of(driver, job.id)["w"].status == "waiting"


def test_another_key_or_event_does_not_match(driver):
    job = _suspended(driver, event="paid", key="order-1")
    assert driver.event_send(name="paid", key="order-2", ttl_seconds=60).ended == 0
    assert driver.event_send(name="refunded", key="order-1", ttl_seconds=60).ended == 0
    assert driver.event_send(name="paid", ttl_seconds=60).ended == 0
    assert steps_of(driver, job.id)["w"].status == "waiting"
    assert claim(driver) == []


def test_a_wait_without_a_key_matches_an_event_without_one(driver):
    job = _suspended(driver, event="deploy.done")
    assert driver.event_send(name="deploy.done", key="x", ttl_seconds=60).ended == 0
    assert driver.event_send(name="deploy.done", payload_json='"ok"', ttl_seconds=60).ended == 1
    assert steps_of(driver, job.id)["w"].output == "ok"


def test_an_event_sent_while_the_attempt_still_runs_is_seen_by_its_suspend(driver):
    job = running(driver)
    wait(driver, job, "w", event="paid", key="k")
    assert driver.event_send(name="paid", key="k", payload_json="7", ttl_seconds=60).ended == 1
    assert get(driver, job.id).state == JobState.RUNNING
    assert driver.job_suspend(job_id=job.id, claim_token=job.claim_token, step="w")
    assert [j.id for j in claim(driver)] == [job.id], "due now, not at the wait's timeout"


def test_a_stored_event_that_raced_the_wait_is_found_by_the_resolve(driver):
    job = running(driver)
    wait(driver, job, "w", event="paid", key="k")
    # An event stored after the wait began whose send did not see the wait (it raced it): the
    # wait looks to the send as if it began later, then is moved back before the event.
    shift_wait(driver, job.id, "w", 3600)
    assert driver.event_send(name="paid", key="k", payload_json="3", ttl_seconds=60).ended == 0
    shift_wait(driver, job.id, "w", -3610)
    assert steps_of(driver, job.id)["w"].status == "waiting"
    step = driver.step_wait_resolve(job_id=job.id, claim_token=job.claim_token, name="w")
    assert (step.status, step.output) == ("done", 3)


def test_one_send_ends_a_thousand_waits(driver):
    requests = [request() for _ in range(1000)]
    driver.job_enqueue_many(requests=requests)
    jobs = claim(driver, limit=1000)
    assert len(jobs) == 1000
    for job in jobs:
        wait(driver, job, "w", event="batch.ready", key="b1")
        assert driver.job_suspend(job_id=job.id, claim_token=job.claim_token, step="w")
    sent = driver.event_send(name="batch.ready", key="b1", payload_json="1", ttl_seconds=60)
    assert sent.ended == 1000
    assert sorted(j.id for j in claim(driver, limit=1000)) == sorted(j.id for j in jobs)


def test_event_send_wakes_the_queues_of_the_jobs_it_made_due(driver):
    if driver.name == "postgres":
        return  # NOTIFY is delivered at commit; the process tests cover PostgreSQL's wake.
    _suspended(driver, event="e")
    with wakes_of(driver) as woken:  # live before the send, so no wake is missed
        driver.event_send(name="e", ttl_seconds=60)
    assert woken == ["default"]


def test_events_purge_expired_is_counted_and_bounded(driver):
    for n in range(5):
        driver.event_send(name="e", key=str(n), ttl_seconds=60)
    assert driver.events_purge_expired(limit=10) == 0
    shift_event_expiry(driver, -120)
    driver.event_send(name="e", key="fresh", ttl_seconds=60)
    assert driver.events_purge_expired(limit=3) == 3
    assert driver.events_purge_expired(limit=10) == 2
    assert driver.events_purge_expired(limit=10) == 0
    assert driver.events_purge_expired(limit=0) == 0
