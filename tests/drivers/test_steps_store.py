"""The step store, on every driver: step_get_many, step_put, step_start_once, step_wait,
step_wait_resolve and job_suspend, each write fenced by the attempt's claim token."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from tests.drivers.steps_support import done, running, shift_wait, steps_of, wait
from tests.drivers.support import ack, claim, counters, get, rescue, seconds_between, utcnow
from ultimat3_jobs.types import JobState


def test_step_put_stores_the_output_and_answers_it_in_seq_order(driver):
    job = running(driver)
    assert done(driver, job, "b", 1, '{"x":[1,2]}')
    assert done(driver, job, "a", 2, '"text"')
    steps = driver.step_get_many(job_id=job.id)
    assert [(s.name, s.seq, s.kind, s.status, s.output) for s in steps] == [
        ("b", 1, "run", "done", {"x": [1, 2]}),
        ("a", 2, "run", "done", "text"),
    ]
    assert all(s.updated_at is not None and s.event is None for s in steps)


def test_step_get_many_of_a_job_without_steps_or_gone_is_empty(driver):
    job = running(driver)
    assert driver.step_get_many(job_id=job.id) == []
    assert driver.step_get_many(job_id=uuid.uuid4()) == []


@pytest.mark.parametrize("how", ["wrong_token", "acked", "cancelled", "rescued"])
def test_step_writes_are_fenced(driver, store, how):
    job = running(driver)
    token = job.claim_token
    if how == "wrong_token":
        token = uuid.uuid4()
    elif how == "acked":
        assert ack(driver, job.id, token)
    elif how == "cancelled":
        assert driver.job_cancel(job_id=job.id)
    else:
        store.expire_lease(job.id)
        assert [r.id for r in rescue(driver)] == [job.id]
    args = {"job_id": job.id, "claim_token": token}
    assert not driver.step_put(**args, name="s", seq=1, kind="run", status="done")
    assert not driver.step_start_once(**args, name="o", seq=2)
    assert driver.step_wait(**args, name="w", seq=3, kind="sleep", seconds=1) is None
    assert driver.step_wait_resolve(**args, name="w") is None
    assert not driver.job_suspend(**args, step="w")
    assert driver.step_get_many(job_id=job.id) == []


def test_a_step_moves_only_forward(driver):
    job = running(driver)
    assert done(driver, job, "s", 1, "1")
    assert not done(driver, job, "s", 1, "2"), "done over done"
    args = {"job_id": job.id, "claim_token": job.claim_token, "seq": 1, "kind": "run"}
    assert driver.step_put(**args, name="s", status="compensated", output_json="null")
    assert not driver.step_put(**args, name="s", status="compensated")
    assert not driver.step_put(**args, name="new", status="compensated")
    (step,) = driver.step_get_many(job_id=job.id)
    assert (step.status, step.output) == ("compensated", 1), "compensation keeps the output"


def test_once_is_started_then_done_and_a_second_start_lands_nothing(driver):
    job = running(driver)
    args = {"job_id": job.id, "claim_token": job.claim_token}
    assert driver.step_start_once(**args, name="charge", seq=1)
    assert not driver.step_start_once(**args, name="charge", seq=1)
    assert steps_of(driver, job.id)["charge"].status == "started"
    assert driver.step_put(
        **args, name="charge", seq=1, kind="once", status="done", output_json='{"id":"ch_1"}'
    )
    step = steps_of(driver, job.id)["charge"]
    assert (step.kind, step.status, step.output) == ("once", "done", {"id": "ch_1"})


def test_step_wait_is_stamped_by_the_store_and_stays_waiting_until_due(driver):
    job = running(driver)
    before = utcnow()
    step = driver.step_wait(
        job_id=job.id, claim_token=job.claim_token, name="nap", seq=1, kind="sleep", seconds=600
    )
    assert step is not None and step.status == "waiting" and step.kind == "sleep"
    assert step.event is None and step.key is None
    assert abs(seconds_between(step.wait_since, before)) < 5
    assert seconds_between(step.wait_until, step.wait_since) == pytest.approx(600, abs=0.01)
    again = driver.step_wait(
        job_id=job.id, claim_token=job.claim_token, name="nap", seq=1, kind="sleep", seconds=1
    )
    assert again is None, "a stored wait is not written again"
    resolved = driver.step_wait_resolve(job_id=job.id, claim_token=job.claim_token, name="nap")
    assert resolved is not None and resolved.status == "waiting"


def test_a_wait_past_its_time_resolves_done_with_null(driver):
    job = running(driver)
    wait(driver, job, "w", event="paid", key="order-1", seconds=60)
    shift_wait(driver, job.id, "w", -120)
    step = driver.step_wait_resolve(job_id=job.id, claim_token=job.claim_token, name="w")
    assert step is not None and (step.status, step.output) == ("done", None)
    assert (step.event, step.key) == ("paid", "order-1")


def test_sleep_until_a_past_moment_resolves_at_once(driver):
    job = running(driver)
    step = driver.step_wait(
        job_id=job.id,
        claim_token=job.claim_token,
        name="until",
        seq=1,
        kind="sleep",
        until=utcnow() - timedelta(minutes=5),
    )
    assert step is not None and step.status == "waiting"
    resolved = driver.step_wait_resolve(job_id=job.id, claim_token=job.claim_token, name="until")
    assert resolved is not None and resolved.status == "done"


def test_job_suspend_gives_the_attempt_back_without_error_or_counter(driver, store):
    job = running(driver, name="tests.sleeper")
    assert job.attempt == 1
    step = driver.step_wait(
        job_id=job.id, claim_token=job.claim_token, name="nap", seq=1, kind="sleep", seconds=600
    )
    assert driver.job_suspend(job_id=job.id, claim_token=job.claim_token, step="nap")
    record = get(driver, job.id)
    assert record.state == JobState.QUEUED
    assert record.attempt == 0
    assert record.errors == []
    assert record.run_at == step.wait_until
    assert store.counters("tests.sleeper") == counters()
    assert claim(driver) == [], "not due before its wake time"
    assert not driver.job_suspend(job_id=job.id, claim_token=job.claim_token, step="nap")
    store.make_due(job.id)
    again = claim(driver)
    assert [(j.id, j.attempt) for j in again] == [(job.id, 1)]


def test_job_suspend_of_a_step_no_longer_waiting_makes_the_job_due_now(driver):
    job = running(driver)
    driver.step_wait(
        job_id=job.id,
        claim_token=job.claim_token,
        name="past",
        seq=1,
        kind="sleep",
        until=utcnow() - timedelta(seconds=30),
    )
    assert driver.job_suspend(job_id=job.id, claim_token=job.claim_token, step="past")
    assert [j.id for j in claim(driver)] == [job.id]


def test_job_suspend_needs_the_stored_step(driver):
    job = running(driver)
    assert not driver.job_suspend(job_id=job.id, claim_token=job.claim_token, step="missing")
    assert get(driver, job.id).state == JobState.RUNNING


def test_a_removed_job_takes_its_steps_with_it(driver):
    job = running(driver)
    assert done(driver, job, "s", 1)
    assert ack(driver, job.id, job.claim_token)
    assert driver.job_remove(job_id=job.id)
    assert driver.step_get_many(job_id=job.id) == []
